package gangplugin

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"

	gang "github.com/kube-safe-scheduler/extender/agents/gang/core"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func withLabels(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		for i := 0; i < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func created(s int) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
}

func prio(n int32) podOpt { return func(p *corev1.Pod) { p.Spec.Priority = &n } }

// guaranteed, burstable: requests (and limits) on the one container; none is BestEffort.
func guaranteed(p *corev1.Pod) {
	r := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: r, Limits: r}
}

func burstable(p *corev1.Pod) {
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
}

func mkPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Labels: map[string]string{},
			CreationTimestamp: metav1.NewTime(t0)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// queued is p's queue entry, first queued when it was created and requeued later.
func queued(p *corev1.Pod) fwk.QueuedEntityInfo {
	pi, err := schedfw.NewPodInfo(p)
	if err != nil {
		panic(err)
	}
	first := p.CreationTimestamp.Time
	return &schedfw.QueuedPodInfo{PodInfo: pi, QueueingParams: schedfw.QueueingParams{Timestamp: t0.Add(time.Hour), InitialAttemptTimestamp: &first}}
}

// fakeWaiting is a pod waiting at Permit.
type fakeWaiting struct {
	pod      *corev1.Pod
	allowed  bool
	rejected string
}

func (w *fakeWaiting) GetPod() *corev1.Pod         { return w.pod }
func (w *fakeWaiting) GetPendingPlugins() []string { return []string{PodGroupName} }
func (w *fakeWaiting) Allow(string)                { w.allowed = true }
func (w *fakeWaiting) Reject(_, msg string) bool   { w.rejected = msg; return true }
func (w *fakeWaiting) Preempt(_, msg string) bool  { return false }

// permitWorld is what Permit sees: the pods assumed or bound (the snapshot) and those waiting.
type permitWorld struct {
	placed  []*corev1.Pod
	waiting []*fakeWaiting
}

func (w *permitWorld) plugin(t *testing.T, groups ...*gang.PodGroup) *PodGroup {
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, g := range groups {
		u := map[string]any{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
			"metadata": map[string]any{"name": g.Name, "namespace": g.Namespace}, "spec": map[string]any{}}
		if g.MinMember != nil {
			u["spec"].(map[string]any)["minMember"] = int64(*g.MinMember)
		}
		if g.ScheduleTimeoutSeconds != nil {
			u["spec"].(map[string]any)["scheduleTimeoutSeconds"] = int64(*g.ScheduleTimeoutSeconds)
		}
		if err := store.Add(unstructuredOf(u)); err != nil {
			t.Fatal(err)
		}
	}
	g := newGroups()
	g.store = fakeInformer{store}
	return &PodGroup{
		name:   PodGroupName,
		args:   DefaultArgs(),
		groups: g,
		assigned: func(key gang.Key, pod *corev1.Pod) int {
			n := 0
			for _, p := range w.placed {
				if k, ok := gang.KeyOf(p); ok && k == key && p.UID != pod.UID {
					n++
				}
			}
			return n
		},
		waiting: func(fn func(fwk.WaitingPod)) {
			for _, wp := range w.waiting {
				fn(wp)
			}
		},
	}
}

// place runs Permit for pod as the scheduler does: a pod told to wait is assumed (in the
// snapshot) and waiting.
func (w *permitWorld) place(t *testing.T, pl *PodGroup, pod *corev1.Pod) (*fwk.Status, time.Duration) {
	st, d := pl.Permit(context.Background(), nil, pod, "n1")
	switch {
	case st.IsSuccess():
		w.placed = append(w.placed, pod)
	case st.IsWait():
		w.placed = append(w.placed, pod)
		w.waiting = append(w.waiting, &fakeWaiting{pod: pod})
	}
	return st, d
}

func TestPermit(t *testing.T) {
	riya := withLabels("podGroup", "g", "minAvailable", "3")
	w := &permitWorld{}
	pl := w.plugin(t)

	// A pod in no group, and another group's member, pass at once.
	if st, _ := w.place(t, pl, mkPod("loose")); !st.IsSuccess() {
		t.Fatalf("pod in no group: %v", st)
	}
	if st, _ := w.place(t, pl, mkPod("solo", withLabels("podGroup", "s", "minAvailable", "1"))); !st.IsSuccess() {
		t.Fatalf("group of minimum 1: %v", st)
	}

	for i, name := range []string{"g-0", "g-1"} {
		st, d := w.place(t, pl, mkPod(name, riya))
		if !st.IsWait() || d != 60*time.Second {
			t.Fatalf("%s: %v for %s, want Wait for 60s (the default)", name, st, d)
		}
		if want := "pod group default/g has " + string(rune('1'+i)) + " of 3 members placed"; st.Message() != want {
			t.Errorf("%s: %q, want %q", name, st.Message(), want)
		}
	}
	other := &fakeWaiting{pod: mkPod("h-0", withLabels("podGroup", "h", "minAvailable", "3"))}
	w.waiting = append(w.waiting, other)
	for _, wp := range w.waiting {
		if wp.allowed {
			t.Fatalf("%s allowed before the group is complete", wp.pod.Name)
		}
	}
	// The third completes the group: it passes and allows the two waiting, not the other group.
	if st, _ := w.place(t, pl, mkPod("g-2", riya)); !st.IsSuccess() {
		t.Fatalf("g-2: %v, want success", st)
	}
	for _, wp := range w.waiting[:2] {
		if !wp.allowed {
			t.Errorf("%s not allowed when its group is complete", wp.pod.Name)
		}
	}
	if other.allowed {
		t.Error("a member of another group was allowed")
	}
}

func TestUnreserveReleasesTheGroup(t *testing.T) {
	riya := withLabels("podGroup", "g", "minAvailable", "3")
	w := &permitWorld{}
	pl := w.plugin(t)
	a, b := mkPod("g-0", riya), mkPod("g-1", riya)
	w.place(t, pl, a)
	w.place(t, pl, b)
	other := &fakeWaiting{pod: mkPod("h-0", withLabels("podGroup", "h", "minAvailable", "3"))}
	w.waiting = append(w.waiting, other)
	// g-0 times out: the framework rejects it and unreserves it; g-1 must go too.
	pl.Unreserve(context.Background(), nil, a, "n1")
	if got := w.waiting[1].rejected; !strings.Contains(got, "pod group default/g: member g-0 was not placed") {
		t.Errorf("g-1 rejected with %q, want the group released", got)
	}
	if w.waiting[0].rejected != "" {
		t.Error("the unreserved pod itself was rejected again")
	}
	if other.rejected != "" {
		t.Error("a member of another group was rejected")
	}
}

func TestPermitPodGroupTimeout(t *testing.T) {
	three, five := int32(3), int32(5)
	w := &permitWorld{}
	pl := w.plugin(t, &gang.PodGroup{Namespace: "default", Name: "pg", MinMember: &three, ScheduleTimeoutSeconds: &five},
		&gang.PodGroup{Namespace: "default", Name: "nt", MinMember: &three})
	pl.args.ScheduleTimeoutSeconds = 7
	if _, d := w.place(t, pl, mkPod("pg-0", withLabels(gang.LabelPodGroupName, "pg"))); d != 5*time.Second {
		t.Errorf("PodGroup with scheduleTimeoutSeconds 5: wait %s", d)
	}
	if _, d := w.place(t, pl, mkPod("nt-0", withLabels(gang.LabelPodGroupName, "nt"))); d != 7*time.Second {
		t.Errorf("PodGroup without scheduleTimeoutSeconds: wait %s, want the args' 7s", d)
	}
	if _, d := w.place(t, pl, mkPod("r-0", withLabels("podGroup", "r", "minAvailable", "2"))); d != 7*time.Second {
		t.Errorf("riya group: wait %s, want the args' 7s", d)
	}
	st, _ := w.place(t, pl, mkPod("ghost-0", withLabels(gang.LabelPodGroupName, "ghost")))
	if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), "PodGroup default/ghost named by label") {
		t.Errorf("missing PodGroup: %v", st)
	}
}

func TestArgs(t *testing.T) {
	for _, c := range []struct{ raw, err string }{
		{``, ""},
		{`{"defaultScheduleTimeoutSeconds": 5}`, ""},
		{`{"defaultScheduleTimeoutSeconds": 0}`, "invalid defaultScheduleTimeoutSeconds: 0 is not in 1..900"},
		{`{"defaultScheduleTimeoutSeconds": 901}`, "invalid defaultScheduleTimeoutSeconds: 901"},
		{`{"scheduleTimeout": 5}`, `unknown field "scheduleTimeout"`},
	} {
		_, err := podGroupSchema.decode(&runtime.Unknown{Raw: []byte(c.raw), ContentType: runtime.ContentTypeJSON})
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %v, want %q", c.raw, err, c.err)
		}
	}
}

func unstructuredOf(o map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: o}
}

// fakeInformer serves a store as the PodGroup informer.
type fakeInformer struct{ cache.Indexer }

func (f fakeInformer) GetStore() cache.Store { return f.Indexer }

func (fakeInformer) HasSynced() bool { return true }

func (fakeInformer) AddEventHandler(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return nil, nil
}
