//go:build memory

// The cache's memory at 5000 nodes and 50,000 pods. Kept out of the ordinary test and
// benchmark runs (it holds ~1 GiB for a minute); run it with
//
//	go test -tags memory -run '^$' -bench CacheMemory -benchtime 1x ./cluster/
//
// CACHE_HEAP_PROFILE=<file> also writes a heap profile of the synced, stripped cache.
package cluster

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

const (
	memNodes = 5000
	memPods  = 50000
)

// BenchmarkCacheMemory reports the live heap the Cache adds once synced over a fake clientset
// holding 5000 nodes and 50,000 pods: heap after GC with the Cache synced, minus the heap after
// GC with only the fake clientset filled. "stripped" is the Cache as shipped; "unstripped" the
// same caches without the transform, for comparison.
func BenchmarkCacheMemory(b *testing.B) {
	for _, stripped := range []bool{true, false} {
		name := "stripped"
		if !stripped {
			name = "unstripped"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				mib, perPod := measureCache(b, stripped)
				b.ReportMetric(mib, "MiB")
				b.ReportMetric(perPod, "B/object")
			}
		})
	}
}

func measureCache(b *testing.B, stripped bool) (mib, bytesPerObject float64) {
	objs := make([]kruntime.Object, 0, memNodes+memPods)
	for i := range memNodes {
		objs = append(objs, realisticNode(i))
	}
	for i := range memPods {
		objs = append(objs, realisticPod(i, fixtures.NodeName(i%memNodes)))
	}
	client := fake.NewClientset(objs...)
	objs = nil
	base := liveHeap()

	s := NewCache(client, nil, quietLog())
	if !stripped {
		identity := func(o any) (any, error) { return o, nil }
		_ = s.nodes.SetTransform(identity)
		_ = s.pods.SetTransform(identity)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop := s.Start(ctx)
	wait, done := context.WithTimeout(ctx, 10*time.Minute)
	if !s.WaitForSync(wait) {
		b.Fatal("caches did not sync")
	}
	done()
	if n, p := len(s.Nodes()), len(s.Pods()); n != memNodes || p != memPods {
		b.Fatalf("cache holds %d nodes and %d pods", n, p)
	}
	after := liveHeap()
	if path := os.Getenv("CACHE_HEAP_PROFILE"); path != "" && stripped {
		if f, err := os.Create(path); err == nil {
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	runtime.KeepAlive(client)
	cancel()
	stop()
	delta := float64(after) - float64(base)
	return delta / (1 << 20), delta / float64(memNodes+memPods)
}

func liveHeap() uint64 {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// realisticNode is fixtures.Node as the API server keeps it: with the managed fields of the
// kubelet (object and status) and of the node annotator, and the annotations the agents read.
func realisticNode(i int) *corev1.Node {
	n := fixtures.Node(i, map[string]string{
		"csi.volume.kubernetes.io/nodeid": fmt.Sprintf(`{"ebs.csi.aws.com":"i-%017x"}`, i),
		"mean-free-cpu":                   "8000", "std-free-cpu": "1200", "mean-free-memory": "34359738368",
		"std-free-memory": "2147483648", "forcasted-free-cpu": "7900", "forcasted-free-memory": "34000000000",
		"requested-cpu": "6500", "requested-memory": "25769803776", "requested-pods": "10",
	})
	now := metav1.Now()
	n.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: fieldsJSON(1500)}},
		{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: fieldsJSON(2500)}, Subresource: "status"},
		{Manager: "node-annotator", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: fieldsJSON(400)}},
	}
	return &n
}

// realisticPod is a Deployment's replica: owner reference, managed fields, one app container
// with env, ports, probes and mounts, a service-account volume, and a running status.
func realisticPod(i int, node string) *corev1.Pod {
	app := fmt.Sprintf("service-%d", i%300)
	name := fmt.Sprintf("%s-7d9f8b6c5-%05x", app, i)
	now := metav1.Now()
	var env []corev1.EnvVar
	for j := range 8 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", j), Value: fmt.Sprintf("value-%d-%d", j, i%17)})
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080), Scheme: "HTTP"}},
		PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("team-%d", i%20), Name: name, GenerateName: app + "-7d9f8b6c5-",
			UID: types.UID(fmt.Sprintf("5f0c1e7a-%04x-4b2d-8e9f-%012d", i%65536, i)), ResourceVersion: fmt.Sprint(100000 + i),
			CreationTimestamp: now,
			Labels:            map[string]string{"app": app, "pod-template-hash": "7d9f8b6c5", "team": fmt.Sprintf("team-%d", i%20), "tier": "backend"},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/restartedAt": "2026-01-02T03:04:05Z",
				"prometheus.io/scrape":              "true", "prometheus.io/port": "9090",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7d9f8b6c5",
				UID: types.UID(fmt.Sprintf("a1b2c3d4-%04x-4000-8000-000000000000", i%300)), Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now,
					FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: fieldsJSON(1800)}},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now,
					FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: fieldsJSON(1200)}, Subresource: "status"},
			},
		},
		Spec: corev1.PodSpec{
			NodeName: node, ServiceAccountName: "default", SchedulerName: "default-scheduler", DNSPolicy: corev1.DNSClusterFirst,
			RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr(int64(30)),
			Priority: ptr(int32(0)), EnableServiceLinks: ptr(true), PreemptionPolicy: ptr(corev1.PreemptLowerPriority),
			Containers: []corev1.Container{{
				Name: "app", Image: fmt.Sprintf("registry.example.com/team-%d/%s:v1.%d.0", i%20, app, i%9),
				Args:  []string{"--config=/etc/app/config.yaml", "--log-level=info"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: "TCP"}, {Name: "metrics", ContainerPort: 9090, Protocol: "TCP"}},
				Env:   env,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"},
					{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
				LivenessProbe: probe, ReadinessProbe: probe,
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File", ImagePullPolicy: "IfNotPresent",
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}},
				{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(3607))}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}}}},
			},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: ptr(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: ptr(int64(300))},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: "10.0.0.1", PodIP: fmt.Sprintf("10.%d.%d.%d", 100+i/65536, i/256%256, i%256),
			StartTime: &now, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{
				{Type: "PodReadyToStartContainers", Status: "True", LastTransitionTime: now},
				{Type: corev1.PodInitialized, Status: "True", LastTransitionTime: now},
				{Type: corev1.PodReady, Status: "True", LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: "True", LastTransitionTime: now},
				{Type: corev1.PodScheduled, Status: "True", LastTransitionTime: now},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", Ready: true, Started: ptr(true), RestartCount: 0,
				Image:       fmt.Sprintf("registry.example.com/team-%d/%s:v1.%d.0", i%20, app, i%9),
				ImageID:     fmt.Sprintf("registry.example.com/team-%d/%s@sha256:%064x", i%20, app, i%300),
				ContainerID: fmt.Sprintf("containerd://%064x", i),
				State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			}},
		},
	}
}

// fieldsJSON is managed-fields JSON of about n bytes (the API server stores these as raw bytes).
func fieldsJSON(n int) []byte {
	out := []byte(`{"f:metadata":{"f:labels":{`)
	for i := 0; len(out) < n-10; i++ {
		out = fmt.Appendf(out, `"f:key-%d":{},`, i)
	}
	out[len(out)-1] = '}'
	return append(out, "}}"...)
}

func ptr[T any](v T) *T { return &v }
