package workload

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func controlled(kind, name string) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{Kind: kind, Name: name, Controller: &yes}}
}

func pod(labels map[string]string, owners []metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "p", Labels: labels, OwnerReferences: owners}}
}

func TestOfByNames(t *testing.T) {
	notController := []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-5d8f"}}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"deployment: the ReplicaSet name less the pod-template-hash",
			pod(map[string]string{"pod-template-hash": "5d8f", "app": "x"}, controlled("ReplicaSet", "web-5d8f")), "deployment/shop/web"},
		{"a ReplicaSet whose name does not end in the hash is its own workload",
			pod(map[string]string{"pod-template-hash": "5d8f"}, controlled("ReplicaSet", "web")), "replicaset/shop/web"},
		{"a bare ReplicaSet (no hash label)",
			pod(nil, controlled("ReplicaSet", "web-5d8f")), "replicaset/shop/web-5d8f"},
		{"statefulset", pod(map[string]string{"app": "x"}, controlled("StatefulSet", "db")), "statefulset/shop/db"},
		{"daemonset", pod(nil, controlled("DaemonSet", "agent")), "daemonset/shop/agent"},
		// 29,500,000 minutes after 1970 is in 2026.
		{"cronjob: the Job name less the scheduled minutes", pod(nil, controlled("Job", "backup-29500000")), "cronjob/shop/backup"},
		{"a Job whose suffix is no schedule", pod(nil, controlled("Job", "backup-12")), "job/shop/backup-12"},
		{"a Job whose suffix is not a plausible minute count", pod(nil, controlled("Job", "backup-123456789")), "job/shop/backup-123456789"},
		{"a Job of no suffix", pod(nil, controlled("Job", "migrate")), "job/shop/migrate"},
		{"any other controller, its kind lower-cased", pod(nil, controlled("RayCluster", "r")), "raycluster/shop/r"},
		{"no controller: app.kubernetes.io/name first",
			pod(map[string]string{"app.kubernetes.io/name": "a", "app": "b"}, nil), "app/shop/a"},
		{"no controller: app", pod(map[string]string{"app": "b"}, nil), "app/shop/b"},
		{"an owner that is not the controller does not count", pod(map[string]string{"app": "b"}, notController), "app/shop/b"},
		{"no controller, no app label: no workload", pod(map[string]string{"podtype": "x", "name": "y"}, nil), ""},
	} {
		if got := Of(c.pod, nil).String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// With listers the owner chain is read, not guessed from names.
func TestOfByListers(t *testing.T) {
	client := fake.NewClientset(
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-5d8f", OwnerReferences: controlled("Deployment", "frontend")}},
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "solo-5d8f"}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "nightly", OwnerReferences: controlled("CronJob", "backup")}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "once-29500000"}},
	)
	f := informers.NewSharedInformerFactory(client, 0)
	l := Listers{ReplicaSets: f.Apps().V1().ReplicaSets().Lister(), Jobs: f.Batch().V1().Jobs().Lister()}
	f.Start(t.Context().Done())
	f.WaitForCacheSync(t.Context().Done())
	hash := map[string]string{"pod-template-hash": "5d8f"}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"the ReplicaSet's Deployment, whatever its name", pod(hash, controlled("ReplicaSet", "web-5d8f")), "deployment/shop/frontend"},
		{"a ReplicaSet of no Deployment, though the hash matches", pod(hash, controlled("ReplicaSet", "solo-5d8f")), "replicaset/shop/solo-5d8f"},
		{"a ReplicaSet the lister does not know: by names", pod(hash, controlled("ReplicaSet", "gone-5d8f")), "deployment/shop/gone"},
		{"the Job's CronJob", pod(nil, controlled("Job", "nightly")), "cronjob/shop/backup"},
		{"a Job of no CronJob, though its suffix looks like one", pod(nil, controlled("Job", "once-29500000")), "job/shop/once-29500000"},
	} {
		if got := Of(c.pod, l).String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	for _, s := range []string{"deployment/shop/web", "app//x", "cronjob/a/b.c"} {
		k, ok := Parse(s)
		if !ok || k.String() != s {
			t.Errorf("Parse(%q) = %+v, %v", s, k, ok)
		}
	}
	for _, s := range []string{"", "deployment", "deployment/shop", "/shop/web", "deployment/shop/"} {
		if k, ok := Parse(s); ok {
			t.Errorf("Parse(%q) = %+v, want not ok", s, k)
		}
	}
}
