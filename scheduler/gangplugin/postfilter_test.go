package gangplugin

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"

	gang "github.com/kube-safe-scheduler/extender/agents/gang/core"
)

// A member that finds no node while its group is short releases every waiting member of its
// group at once (not another group's), and the group's queue timestamp becomes its failure.
func TestPostFilterReleasesTheGroup(t *testing.T) {
	riya := withLabels("podGroup", "g", "minAvailable", "3")
	w := &permitWorld{}
	pl := w.plugin(t)
	now := t0.Add(time.Minute)
	pl.groups.now = func() time.Time { return now }
	w.place(t, pl, mkPod("g-0", riya))
	w.place(t, pl, mkPod("g-1", riya))
	other := &fakeWaiting{pod: mkPod("h-0", withLabels("podGroup", "h", "minAvailable", "3"))}
	w.waiting = append(w.waiting, other)

	_, st := pl.PostFilter(context.Background(), nil, mkPod("g-2", riya), nil)
	if st.Code() != fwk.Unschedulable || !strings.Contains(st.Message(), "pod group default/g is released: g-2 found no node (2 of 3 placed, 2 waiting released)") {
		t.Errorf("PostFilter: %v", st)
	}
	for _, wp := range w.waiting[:2] {
		if !strings.Contains(wp.rejected, "member g-2 found no node while 2 of 3 were placed") {
			t.Errorf("%s: rejected %q, want released", wp.pod.Name, wp.rejected)
		}
	}
	if other.rejected != "" {
		t.Error("a member of another group was rejected")
	}
	if got := pl.groups.timestamp(mkPod("g-5", riya), t0); !got.Equal(now) {
		t.Errorf("the group's queue timestamp %s, want its failure %s", got, now)
	}
	// g is short of members (g-2 is not counted): no backoff, its members bring it back.
	if _, ok := pl.groups.backedOff(gang.Key{Label: "podGroup", Namespace: "default", Name: "g"}); ok {
		t.Error("a group short of members backed off")
	}
}

// Nothing is released when the group has its minimum placed, when few enough are missing
// (podGroupRejectPercentage), or for a pod in no group.
func TestPostFilterKeeps(t *testing.T) {
	ten := withLabels("podGroup", "t", "minAvailable", "10")
	w := &permitWorld{}
	pl := w.plugin(t)
	for i := range 9 {
		w.place(t, pl, mkPod("t-"+string(rune('0'+i)), ten))
	}
	// 1 of 10 missing = 10 % <= the default 10 %: keep waiting.
	if _, st := pl.PostFilter(context.Background(), nil, mkPod("t-9", ten), nil); st.Message() != "" {
		t.Errorf("one of ten missing: %v", st)
	}
	for _, wp := range w.waiting {
		if wp.rejected != "" {
			t.Fatalf("%s released with 1 of 10 missing", wp.pod.Name)
		}
	}
	pl.args.PodGroupRejectPercentage = 0
	if _, st := pl.PostFilter(context.Background(), nil, mkPod("t-9", ten), nil); !strings.Contains(st.Message(), "released") {
		t.Errorf("podGroupRejectPercentage 0: %v", st)
	}
	if _, st := pl.PostFilter(context.Background(), nil, mkPod("loose"), nil); st.Code() != fwk.Unschedulable {
		t.Errorf("pod in no group: %v", st)
	}
}

// With podGroupBackoffSeconds, a group that had all its members and still found no room is
// rejected at PreFilter until the backoff ends, naming it; a group short of members is not
// backed off (its members bring it back).
func TestBackoff(t *testing.T) {
	riya := withLabels("podGroup", "g", "minAvailable", "2")
	w := &permitWorld{}
	pl := w.plugin(t)
	pl.args.PodGroupBackoffSeconds = 30
	now := t0
	pl.groups.now = func() time.Time { return now }
	pl.groups.counts.Set(mkPod("g-0", riya))
	pl.groups.counts.Set(mkPod("g-1", riya))
	w.place(t, pl, mkPod("g-0", riya))
	pl.PostFilter(context.Background(), nil, mkPod("g-1", riya), nil)
	_, st := pl.PreFilter(context.Background(), nil, mkPod("g-1", riya), nil)
	if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), "pod group default/g failed recently: backed off until 2026-01-01T00:00:30Z (podGroupBackoffSeconds 30)") {
		t.Fatalf("PreFilter in backoff: %v", st)
	}
	now = t0.Add(31 * time.Second)
	if _, st := pl.PreFilter(context.Background(), nil, mkPod("g-1", riya), nil); !st.IsSuccess() {
		t.Errorf("PreFilter after the backoff: %v", st)
	}
	short := withLabels("podGroup", "s", "minAvailable", "3")
	pl.PostFilter(context.Background(), nil, mkPod("s-0", short), nil)
	if _, ok := pl.groups.backedOff(gang.Key{Label: "podGroup", Namespace: "default", Name: "s"}); ok {
		t.Error("a group short of members backed off")
	}
}

// The first member to wait at Permit asks for its unplaced siblings to be activated (a sibling
// turned away before it existed is tried again); the second does not ask again.
func TestPermitActivatesSiblings(t *testing.T) {
	riya := withLabels("podGroup", "g", "minAvailable", "3")
	b, c, bound := mkPod("g-b", riya), mkPod("g-c", riya), mkPod("g-x", riya)
	bound.Spec.NodeName = "n1"
	w := &permitWorld{}
	pl := w.plugin(t)
	pl.members = func(gang.Key) []*corev1.Pod { return []*corev1.Pod{mkPod("g-a", riya), b, c, bound} }
	state := schedfw.NewCycleState()
	state.Write(schedfw.PodsToActivateKey, schedfw.NewPodsToActivate())
	if st, _ := pl.Permit(context.Background(), state, mkPod("g-a", riya), "n1"); !st.IsWait() {
		t.Fatalf("g-a: %v", st)
	}
	data, _ := state.Read(schedfw.PodsToActivateKey)
	got := data.(*schedfw.PodsToActivate).Map
	if len(got) != 2 || got["default/g-b"] == nil || got["default/g-c"] == nil {
		t.Errorf("activated %v, want default/g-b and default/g-c", got)
	}
}

// A PodGroup without spec.minMember places its pods (minimum 0) and warns on the PodGroup once
// per version of it.
func TestNoMinMember(t *testing.T) {
	w := &permitWorld{}
	pl := w.plugin(t, &gang.PodGroup{Namespace: "default", Name: "nomin"})
	u := unstructuredOf(map[string]any{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "nomin", "namespace": "default", "resourceVersion": "7"}, "spec": map[string]any{}})
	if err := pl.groups.store.GetStore().Update(u); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	pl.warn = func(pg *gang.PodGroup, reason, note string) {
		warnings = append(warnings, pg.Name+" "+reason+": "+note)
	}
	for range 2 {
		if _, st := pl.PreFilter(context.Background(), nil, mkPod("p", pg("nomin")), nil); !st.IsSuccess() {
			t.Fatalf("PreFilter: %v", st)
		}
	}
	if st, _ := w.place(t, pl, mkPod("p", pg("nomin"))); !st.IsSuccess() {
		t.Fatalf("Permit: %v", st)
	}
	want := "nomin NoMinMember: PodGroup default/nomin has no spec.minMember: read as 0, so its pods are placed without waiting for each other; set spec.minMember"
	if len(warnings) != 1 || warnings[0] != want {
		t.Errorf("warnings %q, want one: %q", warnings, want)
	}
}

func TestCoschedulingArgs(t *testing.T) {
	for _, c := range []struct{ raw, err string }{
		{``, ""},
		{`{"permitWaitingTimeSeconds": 10}`, ""},
		{`{"permitWaitingTimeSeconds": 0, "podGroupBackoffSeconds": 5, "podGroupRejectPercentage": 100}`, ""},
		{`{"permitWaitingTimeSeconds": -1}`, "invalid permitWaitingTimeSeconds: -1 is not in 0..900"},
		{`{"podGroupBackoffSeconds": -1}`, "invalid podGroupBackoffSeconds: -1 is negative"},
		{`{"podGroupRejectPercentage": 101}`, "invalid podGroupRejectPercentage: 101 is not in 0..100"},
		{`{"permitWaitingTimeSeconds": "10s"}`, "permitWaitingTimeSeconds: json: cannot unmarshal string"},
		{`{"defaultScheduleTimeoutSeconds": 5}`, `unknown field "defaultScheduleTimeoutSeconds" (the fields are permitWaitingTimeSeconds, podGroupBackoffSeconds, podGroupRejectPercentage)`},
	} {
		args, err := coschedulingSchema.decode(&runtime.Unknown{Raw: []byte(c.raw), ContentType: runtime.ContentTypeJSON})
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %v, want %q", c.raw, err, c.err)
		}
		if c.raw == "" && args != (Args{ScheduleTimeoutSeconds: 60, PodGroupRejectPercentage: 10}) {
			t.Errorf("defaults %+v, want Coscheduling's (60 s, no backoff, 10 %%)", args)
		}
	}
	// YAML, as kube-scheduler hands pluginConfig args over.
	args, err := coschedulingSchema.decode(&runtime.Unknown{Raw: []byte("permitWaitingTimeSeconds: 10\n"), ContentType: runtime.ContentTypeYAML})
	if err != nil || args.ScheduleTimeoutSeconds != 10 {
		t.Errorf("YAML: %+v, %v", args, err)
	}
}

// A pod of a native pod group that also names one of ours is left to the native group (PreFilter
// skips it, Permit lets it pass) and warned once.
func TestNativeGroupOverrules(t *testing.T) {
	w := &permitWorld{}
	pl := w.plugin(t)
	var warnings []string
	pl.warnPod = func(p *corev1.Pod, reason, note string) { warnings = append(warnings, reason) }
	name := "native"
	p := mkPod("p", withLabels("podGroup", "g", "minAvailable", "3"))
	p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
	for range 2 {
		if _, st := pl.PreFilter(context.Background(), nil, p, nil); st.Code() != fwk.Skip {
			t.Fatalf("PreFilter: %v, want Skip", st)
		}
	}
	if st, _ := w.place(t, pl, p); !st.IsSuccess() {
		t.Errorf("Permit: %v", st)
	}
	if len(warnings) != 1 || warnings[0] != "PodGroupOverruled" {
		t.Errorf("warnings %v, want one PodGroupOverruled", warnings)
	}
}

// Without podGroupBackoffSeconds, a group with all its members that found no room backs off as
// kube-scheduler backs a pod off (1 s doubling to 10 s), since kube-scheduler's own backoff
// lapses on an idle queue (the group was retried about 40 times a second); placed, it starts over.
func TestDefaultBackoff(t *testing.T) {
	riya := withLabels("podGroup", "g", "minAvailable", "2")
	key := gang.Key{Label: "podGroup", Namespace: "default", Name: "g"}
	w := &permitWorld{}
	pl := w.plugin(t)
	now := t0
	pl.groups.now = func() time.Time { return now }
	pl.groups.counts.Set(mkPod("g-0", riya))
	pl.groups.counts.Set(mkPod("g-1", riya))
	w.place(t, pl, mkPod("g-0", riya)) // waits at Permit: each PostFilter below releases it
	var got []time.Duration
	for range 6 {
		pl.PostFilter(context.Background(), nil, mkPod("g-1", riya), nil)
		until, ok := pl.groups.backedOff(key)
		if !ok {
			t.Fatal("not backed off")
		}
		// A member turned away during the backoff does not push it further.
		pl.PostFilter(context.Background(), nil, mkPod("g-0", riya), nil)
		if again, _ := pl.groups.backedOff(key); !again.Equal(until) {
			t.Fatalf("a rejection during the backoff moved its end from %s to %s", until, again)
		}
		got = append(got, until.Sub(now))
		now = until
	}
	if want := []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("backoffs %v, want %v", got, want)
	}
	pl.groups.placed(key)
	pl.PostFilter(context.Background(), nil, mkPod("g-1", riya), nil)
	if until, _ := pl.groups.backedOff(key); until.Sub(now) != time.Second {
		t.Errorf("after the group was placed: %s, want 1s", until.Sub(now))
	}
}

// When a backoff ends, only a group a member of which was turned away meanwhile is brought back.
func TestBackoffEnded(t *testing.T) {
	riya := withLabels("podGroup", "g", "minAvailable", "1")
	key := gang.Key{Label: "podGroup", Namespace: "default", Name: "g"}
	w := &permitWorld{}
	pl := w.plugin(t)
	pl.args.PodGroupBackoffSeconds = 5
	pl.groups.counts.Set(mkPod("g-0", riya))
	pl.PostFilter(context.Background(), nil, mkPod("g-0", riya), nil)
	if pl.groups.backoffEnded(key) {
		t.Error("nothing was turned away, yet the group would be brought back")
	}
	if _, st := pl.PreFilter(context.Background(), nil, mkPod("g-0", riya), nil); st.IsSuccess() {
		t.Fatal("PreFilter passed during the backoff")
	}
	if !pl.groups.backoffEnded(key) {
		t.Error("a member was turned away, yet the group would not be brought back")
	}
}

// Without podGroupBackoffSeconds, a group that held no room (nothing waiting to release) is not
// backed off: it waits for its events, as any pod, and keeps its place in the queue.
func TestNoDefaultBackoffWithoutRelease(t *testing.T) {
	riya := withLabels("podGroup", "g", "minAvailable", "1")
	w := &permitWorld{}
	pl := w.plugin(t)
	pl.groups.counts.Set(mkPod("g-0", riya))
	pl.PostFilter(context.Background(), nil, mkPod("g-0", riya), nil)
	if _, ok := pl.groups.backedOff(gang.Key{Label: "podGroup", Namespace: "default", Name: "g"}); ok {
		t.Error("backed off though nothing was released")
	}
}
