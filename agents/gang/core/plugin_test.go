package core

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

var (
	t0    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	riyaG = Key{LabelPodGroup, "ns", "g"}
)

func TestPermitTimeout(t *testing.T) {
	def := 7 * time.Second
	for _, tc := range []struct {
		name string
		pg   *PodGroup
		want time.Duration
	}{
		{"riya group: the default", nil, def},
		{"PodGroup without scheduleTimeoutSeconds", &PodGroup{}, def},
		{"scheduleTimeoutSeconds 0 reads as unset", &PodGroup{ScheduleTimeoutSeconds: i32(0)}, def},
		{"scheduleTimeoutSeconds 5", &PodGroup{ScheduleTimeoutSeconds: i32(5)}, 5 * time.Second},
		// 3600 s is beyond kube-scheduler's 900 s Permit limit.
		{"cut to 15 minutes", &PodGroup{ScheduleTimeoutSeconds: i32(3600)}, 15 * time.Minute},
	} {
		if got := PermitTimeout(tc.pg, def); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// Permit for a group of minimum 3: the first placed waits and brings its siblings back, the
// second waits, the third completes the group; a minimum of 1 neither waits nor counts.
func TestPermit(t *testing.T) {
	r := Requirement{Key: riyaG, Min: 3}
	for _, tc := range []struct {
		assigned int
		want     Permit
	}{
		{0, Permit{Wait: true, First: true, Reason: "pod group ns/g has 1 of 3 members placed"}},
		{1, Permit{Wait: true, Reason: "pod group ns/g has 2 of 3 members placed"}},
		{2, Permit{Completes: true}},
		{5, Permit{Completes: true}}, // more placed than the minimum (a member replaced)
	} {
		if diff := cmp.Diff(tc.want, r.Permit(func() int { return tc.assigned })); diff != "" {
			t.Errorf("%d assigned (-want +got):\n%s", tc.assigned, diff)
		}
	}
	counted := false
	if got := (Requirement{Key: riyaG, Min: 1}).Permit(func() int { counted = true; return 0 }); got != (Permit{}) || counted {
		t.Errorf("minimum 1: %+v (assigned counted: %v), want nothing held and nothing counted", got, counted)
	}
}

// Release: a member that finds no node releases the waiting ones unless the group has its
// minimum placed or at most rejectPercentage of the minimum is missing.
func TestRelease(t *testing.T) {
	for _, tc := range []struct {
		name       string
		min        int32
		assigned   int
		percentage int32
		want       bool
	}{
		{"1 of 10 missing = 10 % <= 10 %: keep waiting", 10, 9, 10, false},
		{"1 of 10 missing > 0 %: release", 10, 9, 0, true},
		{"2 of 10 missing = 20 % > 10 %", 10, 8, 10, true},
		{"1 of 3 missing = 33 % > 10 %", 3, 2, 10, true},
		{"minimum placed: nothing to release", 3, 3, 0, false},
		{"100 %: never release", 3, 0, 100, false},
	} {
		if got := (Requirement{Key: riyaG, Min: tc.min}).Release(tc.assigned, tc.percentage); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func member3(name string) *corev1.Pod {
	return fixtures.MakePod().Name(name).Namespace("ns").Label(LabelPodGroup, "g").Label(LabelMinAvailable, "2").Obj()
}

// Fail: a group with its members backs off by podGroupBackoffSeconds, else, when it released
// waiting members, 1 s doubling to 10 s; a group short of members is not kept out (its members
// bring it back) and one that released nothing waits for its events. Each failure is its queue
// timestamp; placing the group forgets all of it.
func TestFail(t *testing.T) {
	r := Requirement{Key: riyaG, Min: 2}
	complete, short := NewCounts(), NewCounts()
	complete.Set(member3("g-0"))
	complete.Set(member3("g-1"))
	h := NewHistory()
	now := t0
	var got []time.Duration
	for range 6 {
		d := h.Fail(r, complete, member3("g-1"), now, 0, 1)
		until, ok := h.BackedOff(r.Key, now, false)
		if !ok || until.Sub(now) != d {
			t.Fatalf("backoff %s, backed off until %s (%v)", d, until, ok)
		}
		got = append(got, d)
		now = until
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("default backoffs %v, want %v", got, want)
	}
	if ts := h.QueueTime(r.Key, t0, t0); !ts.Equal(t0.Add(25 * time.Second)) {
		t.Errorf("queue time %s, want the last failure", ts)
	}
	h.Placed(r.Key)
	if d := h.Fail(r, complete, member3("g-1"), now, 0, 1); d != time.Second {
		t.Errorf("after the group was placed: %s, want 1s", d)
	}
	h.Placed(r.Key)
	if d := h.Fail(r, complete, member3("g-1"), now, 30*time.Second, 0); d != 30*time.Second {
		t.Errorf("podGroupBackoffSeconds 30: %s", d)
	}
	h.Placed(r.Key)
	if d := h.Fail(r, complete, member3("g-1"), now, 0, 0); d != 0 {
		t.Errorf("nothing released, no podGroupBackoffSeconds: backoff %s", d)
	}
	// Minimum 3: g-0 counted and g-1 (counted for itself) make 2.
	short.Set(member3("g-0"))
	if d := h.Fail(Requirement{Key: riyaG, Min: 3}, short, member3("g-1"), now, 30*time.Second, 1); d != 0 {
		t.Errorf("group short of members: backoff %s", d)
	}
	if _, ok := h.BackedOff(r.Key, now, false); ok {
		t.Error("group short of members backed off")
	}
}

// A group backed off is brought back at the end only if a member was turned away meanwhile;
// the backoff ends at its time.
func TestBackedOff(t *testing.T) {
	r := Requirement{Key: riyaG, Min: 1}
	counts := NewCounts()
	h := NewHistory()
	h.Fail(r, counts, member3("g-0"), t0, 5*time.Second, 0)
	if _, ok := h.BackedOff(r.Key, t0.Add(time.Second), false); !ok {
		t.Fatal("not backed off")
	}
	if h.BackoffEnded(r.Key) {
		t.Error("nothing turned away, yet the group would be brought back")
	}
	if until, ok := h.BackedOff(r.Key, t0.Add(time.Second), true); !ok || !until.Equal(t0.Add(5*time.Second)) {
		t.Errorf("backed off until %s (%v)", until, ok)
	}
	if !h.BackoffEnded(r.Key) || h.BackoffEnded(r.Key) {
		t.Error("a member turned away: brought back once")
	}
	if _, ok := h.BackedOff(r.Key, t0.Add(5*time.Second), false); ok {
		t.Error("still backed off at its end")
	}
}

// The queue timestamp: the last failure, else the group's creation (the PodGroup's, a riya
// group's oldest member's), else the pod's own queueing time.
func TestQueueTime(t *testing.T) {
	pgKey := Key{LabelPodGroupName, "ns", "pg"}
	lookup := podGroups(PodGroup{Namespace: "ns", Name: "pg", Created: t0.Add(time.Second)})
	counts := NewCounts()
	old := member3("g-0")
	old.CreationTimestamp = metav1.NewTime(t0.Add(3 * time.Second))
	counts.Set(old)
	queued := t0.Add(time.Hour)
	h := NewHistory()
	for _, tc := range []struct {
		name   string
		key    Key
		lookup PodGroupLookup
		want   time.Time
	}{
		{"PodGroup: its creation", pgKey, lookup, t0.Add(time.Second)},
		{"PodGroup not read yet", pgKey, nil, queued},
		{"PodGroup missing", Key{LabelPodGroupName, "ns", "ghost"}, lookup, queued},
		{"riya group: its oldest member", riyaG, nil, t0.Add(3 * time.Second)},
		{"riya group with no member counted", Key{LabelPodGroup, "ns", "empty"}, nil, queued},
	} {
		if got := h.QueueTime(tc.key, Created(tc.key, tc.lookup, counts), queued); !got.Equal(tc.want) {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	h.MarkFailed(pgKey, t0.Add(20*time.Second))
	if got := h.QueueTime(pgKey, Created(pgKey, lookup, counts), queued); !got.Equal(t0.Add(20 * time.Second)) {
		t.Errorf("after a failure: %s, want the failure", got)
	}
}

func TestWarnOnce(t *testing.T) {
	h := NewHistory()
	for i, tc := range []struct {
		version string
		want    bool
	}{{"7", true}, {"7", false}, {"8", true}, {"8", false}} {
		if got := h.WarnOnce("ns/pg", tc.version); got != tc.want {
			t.Errorf("call %d, version %s: %v, want %v", i, tc.version, got, tc.want)
		}
	}
}

// Admit: the quorum first (the room is not computed for a group short of members), then the
// room when the PodGroup asks for some and the room is known.
func TestAdmit(t *testing.T) {
	counts := NewCounts()
	counts.Set(member3("g-0"))
	r := Requirement{Key: riyaG, Min: 2, MinField: "minAvailable"}
	computed := 0
	room := func(cpu string) func() []corev1.ResourceList {
		return func() []corev1.ResourceList {
			computed++
			return []corev1.ResourceList{{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("10")}}
		}
	}
	// g-2 is a third pod: not counted yet, counted for itself (2 of 2).
	if got, want := r.Admit(counts, member3("g-0"), room("1")), "pod group ns/g has 1 of 2 pods (minAvailable 2)"; got != want || computed != 0 {
		t.Errorf("short: %q (room computed %d times), want %q", got, computed, want)
	}
	if got := r.Admit(counts, member3("g-2"), room("1")); got != "" || computed != 0 {
		t.Errorf("quorum, no minResources: %q (room computed %d times)", got, computed)
	}
	r.MinResources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	want := "pod group ns/g: spec.minResources does not fit in the cluster's free room (summed over 1 nodes): cpu 2 requested, 1 free"
	if got := r.Admit(counts, member3("g-2"), room("1")); got != want {
		t.Errorf("room short: %q, want %q", got, want)
	}
	if got := r.Admit(counts, member3("g-2"), room("2")); got != "" {
		t.Errorf("room enough: %q", got)
	}
	if got := r.Admit(counts, member3("g-2"), nil); got != "" {
		t.Errorf("room unknown: %q, want the room not judged", got)
	}
}

func TestSameGroup(t *testing.T) {
	other := fixtures.MakePod().Name("h-0").Namespace("ns").Label(LabelPodGroup, "h").Obj()
	elsewhere := fixtures.MakePod().Name("g-0").Namespace("other").Label(LabelPodGroup, "g").Obj()
	pgSameName := fixtures.MakePod().Name("x").Namespace("ns").Label(LabelPodGroupName, "g").Obj()
	loose := fixtures.MakePod().Name("l").Namespace("ns").Obj()
	for _, tc := range []struct {
		name string
		a, b *corev1.Pod
		want bool
	}{
		{"two members", member3("g-0"), member3("g-1"), true},
		{"another group", member3("g-0"), other, false},
		{"same name, another namespace", member3("g-0"), elsewhere, false},
		{"a PodGroup of the same name is another group", member3("g-0"), pgSameName, false},
		{"pods in no group", loose, loose, false},
	} {
		if got := SameGroup(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
