package usage

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/workload"
)

// webPod is a pod of Deployment ns/name requesting cpu and memory.
func webPod(ns, name, cpu, memory string) *corev1.Pod {
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-5d8f-x", Labels: map[string]string{"pod-template-hash": "5d8f"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: name + "-5d8f", Controller: &yes}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}}}}},
	}
}

func testLearner(t testing.TB, mod func(*Config)) *Learner {
	t.Helper()
	cfg := DefaultConfig()
	cfg.MinObservations, cfg.MinSpan = 4, time.Minute
	if mod != nil {
		mod(&cfg)
	}
	l, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.now = func() time.Time { return t0.Add(10 * time.Minute) }
	return l
}

func TestEstimate(t *testing.T) {
	l := testLearner(t, nil)
	p := webPod("shop", "web", "1", "1Gi")
	if e := l.Estimate(p); e.Trusted || e.CPU != 1 || e.Memory != 1<<30 || !strings.Contains(e.Evidence, "deployment shop/web not observed") {
		t.Errorf("before any sample: %+v, want the request", e)
	}
	// Pods use 2 cpu (2x the request) and 0.5 Gi, one sample every 30 s.
	for i := range 3 {
		l.Observe(p, 2, 1<<29, t0.Add(time.Duration(i)*30*time.Second))
	}
	if e := l.Estimate(p); e.Trusted || e.CPU != 1 || !strings.Contains(e.Evidence, "3 observations of deployment shop/web, fewer than 4") {
		t.Errorf("3 samples: %+v, want the request", e)
	}
	// A fourth sample, 90 s after the first: trusted. p90 is the end of 2's bucket: at most 5 %
	// above 2; memory: the end of 0.5's bucket times 1 Gi, above the 0.5 Gi peak.
	l.Observe(p, 2, 1<<29, t0.Add(90*time.Second))
	e := l.Estimate(p)
	cpuWant := bucketStart(bucketOf(2) + 1)
	memWant := bucketStart(bucketOf(0.5)+1) * (1 << 30)
	if !e.Trusted || e.CPU != cpuWant || e.Memory != memWant || e.Workload.String() != "deployment/shop/web" {
		t.Errorf("trusted: %+v, want cpu %v memory %v", e, cpuWant, memWant)
	}
	if e.CPU < 2 || e.CPU > 2.1 {
		t.Errorf("cpu estimate %v, want 2..2.1", e.CPU)
	}
	if want := "p90 of 4 observations of deployment shop/web, request 1 cpu 1.00Gi memory"; e.Evidence != want {
		t.Errorf("evidence %q, want %q", e.Evidence, want)
	}
	// Another pod of the workload with another request: the ratio scales with its request.
	if e := l.Estimate(webPod("shop", "web", "500m", "1Gi")); e.CPU != cpuWant/2 {
		t.Errorf("half the request: cpu %v, want %v", e.CPU, cpuWant/2)
	}
	// Not the same workload in another namespace.
	if e := l.Estimate(webPod("other", "web", "1", "1Gi")); e.Trusted {
		t.Errorf("another namespace: %+v, want untrusted", e)
	}
	// A pod of no workload keeps its request.
	bare := webPod("shop", "web", "1", "1Gi")
	bare.OwnerReferences, bare.Labels = nil, nil
	if k := l.Observe(bare, 5, 5, t0); !k.IsZero() {
		t.Errorf("a bare pod has workload %v", k)
	}
	if e := l.Estimate(bare); e.Trusted || e.CPU != 1 || !strings.Contains(e.Evidence, "no workload") {
		t.Errorf("bare pod: %+v", e)
	}
}

// Memory never falls below the recent peak; the peak expires after two windows.
func TestMemoryPeakFloor(t *testing.T) {
	l := testLearner(t, func(c *Config) { c.PeakWindow = time.Hour })
	p := webPod("shop", "db", "1", "1Gi")
	// 0.25 Gi most of the time, once 3 Gi (3x the request).
	for i := range 40 {
		mem := float64(1 << 28)
		if i == 5 {
			mem = 3 << 30
		}
		l.Observe(p, 1, mem, t0.Add(time.Duration(i)*10*time.Second))
	}
	l.now = func() time.Time { return t0.Add(30 * time.Minute) }
	e := l.Estimate(p)
	// p90 of the ratios is 0.25's bucket end; the 3 Gi peak is above it.
	if e.Memory != 3<<30 || !strings.HasSuffix(e.Evidence, "memory at the recent peak") {
		t.Errorf("memory %v (%s), want the 3 Gi peak", e.Memory, e.Evidence)
	}
	// In the next window the previous window's peak still counts.
	l.now = func() time.Time { return t0.Add(90 * time.Minute) }
	if e := l.Estimate(p); e.Memory != 3<<30 {
		t.Errorf("next window: memory %v, want the 3 Gi peak", e.Memory)
	}
	// Two windows on, it no longer does.
	l.now = func() time.Time { return t0.Add(121 * time.Minute) }
	if e, want := l.Estimate(p), bucketStart(bucketOf(0.25)+1)*(1<<30); e.Memory != want {
		t.Errorf("two windows on: memory %v, want p90 %v", e.Memory, want)
	}
}

// At most MaxWorkloads are kept: the least recently observed goes.
func TestBound(t *testing.T) {
	l := testLearner(t, func(c *Config) { c.MaxWorkloads = 3 })
	for i, name := range []string{"a", "b", "c"} {
		l.Observe(webPod("ns", name, "1", "1Gi"), 1, 1, t0.Add(time.Duration(i)*time.Second))
	}
	l.Observe(webPod("ns", "a", "1", "1Gi"), 1, 1, t0.Add(5*time.Second)) // a is now the most recent
	l.Observe(webPod("ns", "d", "1", "1Gi"), 1, 1, t0.Add(6*time.Second)) // b goes
	if l.Len() != 3 {
		t.Fatalf("%d workloads, want 3", l.Len())
	}
	for name, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		_, ok := l.m[workload.Key{Kind: "deployment", Namespace: "ns", Name: name}]
		if ok != want {
			t.Errorf("workload %s kept: %v, want %v", name, ok, want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	c.Percentile, c.MinObservations, c.HalfLife = 1.5, 0, 0
	err := c.Validate()
	for _, f := range []string{"percentile", "minObservations", "halfLife"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Validate() = %v, want %s named", err, f)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// fill gives l n workloads, each with 24 samples spread like a real workload's (a few buckets).
func fill(l *Learner, n int) {
	for w := range n {
		p := webPod(fmt.Sprintf("ns-%d", w%50), fmt.Sprintf("workload-%d", w), "1", "1Gi")
		for i := range 24 {
			x := 1 + 0.3*math.Sin(float64(w+i))
			l.Observe(p, x, x*(1<<30), t0.Add(time.Duration(i)*time.Minute))
		}
	}
}

// The learner's heap for 10,000 workloads (reported: go test -run TestMemory -v ./usage/).
func TestMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 10,000 workloads")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l := testLearner(t, nil)
	fill(l, 10000)
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("10,000 workloads: %.1f MiB of heap (%d bytes each)", float64(heap)/(1<<20), heap/10000)
	if heap > 64<<20 {
		t.Errorf("10,000 workloads take %d bytes, more than 64 MiB", heap)
	}
	runtime.KeepAlive(l)
}

func BenchmarkObserve(b *testing.B) {
	l := testLearner(b, nil)
	pods := make([]*corev1.Pod, 1000)
	for i := range pods {
		pods[i] = webPod("ns", fmt.Sprintf("w%d", i), "1", "1Gi")
	}
	b.ResetTimer()
	for i := range b.N {
		l.Observe(pods[i%len(pods)], 1.2, 1<<30, t0.Add(time.Duration(i)*time.Second))
	}
}

func BenchmarkEstimate(b *testing.B) {
	l := testLearner(b, nil)
	fill(l, 1000)
	p := webPod("ns-7", "workload-7", "1", "1Gi")
	b.ResetTimer()
	for range b.N {
		_ = l.Estimate(p)
	}
}

// TestRequestsAsKubeScheduler pins Requests, and framework.CPUMemoryRequests it reads, to what
// kube-scheduler's fit counts for a pod: containers summed, the larger of that and each init
// container, restartable init containers (sidecars) added to both, pod-level requests when set,
// then the overhead; Requests is the same in cores and bytes.
func TestRequestsAsKubeScheduler(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	rl := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	container := func(name, cpu, mem string) corev1.Container {
		return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: rl(cpu, mem)}}
	}
	pod := func(mod func(*corev1.PodSpec), containers ...corev1.Container) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: containers}}
		if mod != nil {
			mod(&p.Spec)
		}
		return p
	}
	const mi = 1 << 20
	tests := []struct {
		name     string
		pod      *corev1.Pod
		milliCPU int64
		memory   int64
	}{
		{"no requests", pod(nil, corev1.Container{Name: "c"}), 0, 0},
		// 100m + 200m, 64Mi + 128Mi.
		{"containers summed", pod(nil, container("a", "100m", "64Mi"), container("b", "200m", "128Mi")), 300, 192 * mi},
		// cpu max(300m, 500m) = 500m; memory max(192Mi, 32Mi) = 192Mi.
		{"init container larger in cpu", pod(func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{container("init", "500m", "32Mi")}
		}, container("a", "100m", "64Mi"), container("b", "200m", "128Mi")), 500, 192 * mi},
		// A sidecar (50m, 16Mi) started before an init container (500m, 32Mi): it runs beside
		// the containers (300m + 50m, 192Mi + 16Mi) and beside the init container (500m + 50m,
		// 32Mi + 16Mi): cpu max(350m, 550m) = 550m; memory max(208Mi, 48Mi) = 208Mi.
		{"sidecar", pod(func(s *corev1.PodSpec) {
			side := container("proxy", "50m", "16Mi")
			side.RestartPolicy = &always
			s.InitContainers = []corev1.Container{side, container("init", "500m", "32Mi")}
		}, container("a", "100m", "64Mi"), container("b", "200m", "128Mi")), 550, 208 * mi},
		// 300m + 25m, 192Mi + 8Mi.
		{"overhead", pod(func(s *corev1.PodSpec) { s.Overhead = rl("25m", "8Mi") },
			container("a", "100m", "64Mi"), container("b", "200m", "128Mi")), 325, 200 * mi},
		// Pod-level requests replace the containers' sum; the overhead is added: 2 + 0.025, 2Gi + 8Mi.
		{"pod-level requests", pod(func(s *corev1.PodSpec) {
			s.Resources = &corev1.ResourceRequirements{Requests: rl("2", "2Gi")}
			s.Overhead = rl("25m", "8Mi")
		}, container("a", "100m", "64Mi")), 2025, 2048*mi + 8*mi},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			milliCPU, memory := framework.CPUMemoryRequests(tc.pod)
			if milliCPU != tc.milliCPU || memory != tc.memory {
				t.Errorf("framework.CPUMemoryRequests = %dm, %d bytes; want %dm, %d", milliCPU, memory, tc.milliCPU, tc.memory)
			}
			cpu, mem := Requests(tc.pod)
			if cpu != float64(tc.milliCPU)/1000 || mem != float64(tc.memory) {
				t.Errorf("Requests = %v cores, %v bytes; want %v, %v", cpu, mem, float64(tc.milliCPU)/1000, float64(tc.memory))
			}
		})
	}
}
