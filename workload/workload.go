// Package workload names the workload a pod belongs to: its controller chain (ReplicaSet ->
// Deployment, StatefulSet, DaemonSet, Job -> CronJob), else its app label within its
// namespace. It is the one notion of "pods of the same kind" that the usage learner (package
// usage) and the reward agent's pod types share.
package workload

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kinds of workload. KindApp is a pod of no controller grouped by its app label.
const (
	KindDeployment  = "deployment"
	KindReplicaSet  = "replicaset"
	KindStatefulSet = "statefulset"
	KindDaemonSet   = "daemonset"
	KindJob         = "job"
	KindCronJob     = "cronjob"
	KindApp         = "app"
)

// AppLabels are the labels naming a pod's application when it has no controller, in order.
var AppLabels = []string{"app.kubernetes.io/name", "app"}

// Key names a workload. The zero Key is "no workload".
type Key struct {
	Kind      string
	Namespace string
	Name      string
}

// IsZero reports that the pod has no workload.
func (k Key) IsZero() bool { return k.Name == "" }

// String is "kind/namespace/name" ("" for no workload): unambiguous, since neither a kind nor
// a namespace contains a slash.
func (k Key) String() string {
	if k.IsZero() {
		return ""
	}
	return k.Kind + "/" + k.Namespace + "/" + k.Name
}

// Parse reads a Key written by String.
func Parse(s string) (Key, bool) {
	kind, rest, ok := strings.Cut(s, "/")
	if !ok {
		return Key{}, false
	}
	ns, name, ok := strings.Cut(rest, "/")
	if !ok || kind == "" || name == "" {
		return Key{}, false
	}
	return Key{Kind: kind, Namespace: ns, Name: name}, true
}

// Owners tells the controller of a ReplicaSet or a Job when the caller knows it (from a
// lister); ok false means unknown, and Of then reads the names. A nil Owners always reads the
// names.
type Owners interface {
	// Controller returns the controller reference of the object kind (ReplicaSet or Job)
	// namespace/name, nil for none; ok false when the object is not known.
	Controller(kind, namespace, name string) (ref *metav1.OwnerReference, ok bool)
}

// Of returns pod's workload:
//
//   - a pod controlled by a ReplicaSet belongs to the ReplicaSet's Deployment: the
//     ReplicaSet's own controller when owners knows it, else the ReplicaSet's name less the
//     "-<pod-template-hash>" suffix when the pod's pod-template-hash label matches it (a
//     Deployment names its ReplicaSets so), else the ReplicaSet itself;
//   - a pod controlled by a Job belongs to the Job's CronJob: the Job's controller when owners
//     knows it, else, when owners does not know the Job, the Job's name less a "-<minutes>"
//     suffix (a CronJob names its Jobs "<cronjob>-<scheduled time in minutes since 1970>"),
//     else the Job;
//   - a pod controlled by a StatefulSet or a DaemonSet belongs to it; by any other controller
//     (a custom resource), to that controller, its kind lower-cased;
//   - a pod of no controller belongs to its app label's value (app.kubernetes.io/name, else
//     app) in its namespace; with neither, to no workload (the zero Key).
func Of(pod *corev1.Pod, owners Owners) Key {
	ref := metav1.GetControllerOfNoCopy(pod) // read only: no copy to allocate (an agent's hot path)
	if ref == nil {
		for _, l := range AppLabels {
			if v := pod.Labels[l]; v != "" {
				return Key{Kind: KindApp, Namespace: pod.Namespace, Name: v}
			}
		}
		return Key{}
	}
	ns := pod.Namespace
	switch ref.Kind {
	case "ReplicaSet":
		if owner, known := lookup(owners, "ReplicaSet", ns, ref.Name); known {
			if owner != nil && owner.Kind == "Deployment" {
				return Key{Kind: KindDeployment, Namespace: ns, Name: owner.Name}
			}
			return Key{Kind: KindReplicaSet, Namespace: ns, Name: ref.Name}
		}
		if hash := pod.Labels["pod-template-hash"]; hash != "" {
			if name, ok := strings.CutSuffix(ref.Name, "-"+hash); ok && name != "" {
				return Key{Kind: KindDeployment, Namespace: ns, Name: name}
			}
		}
		return Key{Kind: KindReplicaSet, Namespace: ns, Name: ref.Name}
	case "Job":
		if owner, known := lookup(owners, "Job", ns, ref.Name); known {
			if owner != nil && owner.Kind == "CronJob" {
				return Key{Kind: KindCronJob, Namespace: ns, Name: owner.Name}
			}
			return Key{Kind: KindJob, Namespace: ns, Name: ref.Name}
		}
		if name, ok := cronJobOf(ref.Name); ok {
			return Key{Kind: KindCronJob, Namespace: ns, Name: name}
		}
		return Key{Kind: KindJob, Namespace: ns, Name: ref.Name}
	case "StatefulSet":
		return Key{Kind: KindStatefulSet, Namespace: ns, Name: ref.Name}
	case "DaemonSet":
		return Key{Kind: KindDaemonSet, Namespace: ns, Name: ref.Name}
	}
	return Key{Kind: strings.ToLower(ref.Kind), Namespace: ns, Name: ref.Name}
}

func lookup(owners Owners, kind, ns, name string) (*metav1.OwnerReference, bool) {
	if owners == nil {
		return nil, false
	}
	return owners.Controller(kind, ns, name)
}

// Scheduled times a CronJob's Job name may carry, in minutes since 1970: 2001-09-09 to
// 2160-11-08 (eight or nine digits). A Job named "<x>-<eight digits>" by hand in that range is
// read as a CronJob's: only without a Job lister (see Of).
const (
	minScheduleMinutes = 16_700_000
	maxScheduleMinutes = 100_000_000
)

// cronJobOf returns the CronJob named by a Job's name "<cronjob>-<minutes>".
func cronJobOf(job string) (string, bool) {
	i := strings.LastIndexByte(job, '-')
	if i <= 0 {
		return "", false
	}
	suffix := job[i+1:]
	if len(suffix) < 8 || len(suffix) > 9 {
		return "", false
	}
	m, err := strconv.ParseUint(suffix, 10, 64)
	if err != nil || m < minScheduleMinutes || m >= maxScheduleMinutes {
		return "", false
	}
	return job[:i], true
}
