package core

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

func i32(v int32) *int32 { return &v }

// podGroups is a PodGroupLookup over fixed objects.
func podGroups(groups ...PodGroup) PodGroupLookup {
	return func(namespace, name string) (*PodGroup, error) {
		for _, g := range groups {
			if g.Namespace == namespace && g.Name == name {
				return &g, nil
			}
		}
		return nil, nil
	}
}

func pod(labels map[string]string) *corev1.Pod {
	w := fixtures.MakePod().Name("p").Namespace("ns")
	for k, v := range labels {
		w.Label(k, v)
	}
	return w.Obj()
}

func TestResolve(t *testing.T) {
	lookup := podGroups(
		PodGroup{Namespace: "ns", Name: "pg", MinMember: i32(3), ScheduleTimeoutSeconds: i32(20)},
		PodGroup{Namespace: "ns", Name: "no-timeout", MinMember: i32(2)},
		PodGroup{Namespace: "ns", Name: "zero-timeout", MinMember: i32(2), ScheduleTimeoutSeconds: i32(0)},
		PodGroup{Namespace: "ns", Name: "no-min"},
		PodGroup{Namespace: "ns", Name: "negative", MinMember: i32(-1)},
		PodGroup{Namespace: "other", Name: "elsewhere", MinMember: i32(2)},
	)
	riya := func(name string, min int32) Requirement {
		return Requirement{Key: Key{LabelPodGroup, "ns", name}, Min: min, MinField: "minAvailable", ScheduleTimeout: time.Minute}
	}
	cosched := func(name string, min int32, timeout time.Duration) Requirement {
		return Requirement{Key: Key{LabelPodGroupName, "ns", name}, Min: min, MinField: "minMember", ScheduleTimeout: timeout}
	}
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		want    Requirement
		in      bool
		wantErr string
	}{
		{name: "no labels"},
		{name: "unrelated labels", labels: map[string]string{"app": "web"}},
		{name: "empty group name: no group", labels: map[string]string{LabelPodGroup: "", LabelMinAvailable: "3"}},
		{name: "a minimum without a group: no group", labels: map[string]string{LabelMinAvailable: "3"}},
		{name: "empty PodGroup name: no group", labels: map[string]string{LabelPodGroupName: ""}},

		{name: "riya", labels: map[string]string{LabelPodGroup: "g", LabelMinAvailable: "3"}, want: riya("g", 3), in: true},
		{name: "riya minimum 0 holds nothing back", labels: map[string]string{LabelPodGroup: "g", LabelMinAvailable: "0"}, want: riya("g", 0), in: true},
		{name: "riya largest minimum", labels: map[string]string{LabelPodGroup: "g", LabelMinAvailable: "2147483647"}, want: riya("g", 2147483647), in: true},
		{name: "riya minimum missing", labels: map[string]string{LabelPodGroup: "g"},
			wantErr: "pod is in pod group ns/g (label podGroup) but has no label minAvailable"},
		{name: "riya minimum empty", labels: map[string]string{LabelPodGroup: "g", LabelMinAvailable: ""},
			wantErr: `label minAvailable is "", not an integer (pod group ns/g)`},
		{name: "riya minimum not a number", labels: map[string]string{LabelPodGroup: "g", LabelMinAvailable: "three"},
			wantErr: `label minAvailable is "three", not an integer (pod group ns/g)`},
		{name: "riya minimum a fraction", labels: map[string]string{LabelPodGroup: "g", LabelMinAvailable: "2.5"},
			wantErr: `label minAvailable is "2.5", not an integer (pod group ns/g)`},
		{name: "riya minimum beyond int32", labels: map[string]string{LabelPodGroup: "g", LabelMinAvailable: "2147483648"},
			wantErr: `label minAvailable is "2147483648", not an integer (pod group ns/g)`},
		{name: "riya minimum negative", labels: map[string]string{LabelPodGroup: "g", LabelMinAvailable: "-2"},
			wantErr: `label minAvailable is "-2": a minimum cannot be negative (pod group ns/g)`},

		{name: "PodGroup", labels: map[string]string{LabelPodGroupName: "pg"}, want: cosched("pg", 3, 20*time.Second), in: true},
		{name: "PodGroup without a timeout: the default", labels: map[string]string{LabelPodGroupName: "no-timeout"},
			want: cosched("no-timeout", 2, time.Minute), in: true},
		{name: "PodGroup with timeout 0: the default", labels: map[string]string{LabelPodGroupName: "zero-timeout"},
			want: cosched("zero-timeout", 2, time.Minute), in: true},
		{name: "PodGroup missing", labels: map[string]string{LabelPodGroupName: "ghost"},
			wantErr: "PodGroup ns/ghost named by label scheduling.x-k8s.io/pod-group does not exist"},
		{name: "PodGroup of another namespace", labels: map[string]string{LabelPodGroupName: "elsewhere"},
			wantErr: "PodGroup ns/elsewhere named by label scheduling.x-k8s.io/pod-group does not exist"},
		{name: "PodGroup without minMember: 0 (no quorum), as Coscheduling reads it, with a warning", labels: map[string]string{LabelPodGroupName: "no-min"},
			want: Requirement{Key: Key{LabelPodGroupName, "ns", "no-min"}, MinField: "minMember", ScheduleTimeout: time.Minute,
				Warning: "PodGroup ns/no-min has no spec.minMember: read as 0, so its pods are placed without waiting for each other; set spec.minMember"}, in: true},
		{name: "PodGroup with a negative minMember", labels: map[string]string{LabelPodGroupName: "negative"},
			wantErr: "PodGroup ns/negative has spec.minMember -1: a minimum cannot be negative"},
		{name: "PodGroup label with a riya minimum: the PodGroup's minimum", labels: map[string]string{LabelPodGroupName: "pg", LabelMinAvailable: "9"},
			want: cosched("pg", 3, 20*time.Second), in: true},

		{name: "both group labels", labels: map[string]string{LabelPodGroup: "g", LabelMinAvailable: "3", LabelPodGroupName: "pg"},
			wantErr: `pod has both label podGroup="g" and label scheduling.x-k8s.io/pod-group="pg": a pod belongs to one group; keep one`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, in, err := Resolve(pod(tc.labels), lookup)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if in != tc.in {
				t.Fatalf("in a group: %v, want %v", in, tc.in)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("requirement (-want +got):\n%s", diff)
			}
		})
	}
}

// A malformed PodGroup's error reaches the caller as the rejection.
func TestResolveMalformedPodGroup(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"namespace": "ns", "name": "pg"},
		"spec": map[string]any{"minMember": "three"}}}
	lookup := func(string, string) (*PodGroup, error) { return PodGroupFromUnstructured(u) }
	_, _, err := Resolve(pod(map[string]string{LabelPodGroupName: "pg"}), lookup)
	if want := `PodGroup ns/pg: spec.minMember is "three", not an integer`; err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

func TestPodGroupFromUnstructured(t *testing.T) {
	obj := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
			"metadata": map[string]any{"namespace": "ns", "name": "pg"}, "spec": spec}}
	}
	for _, tc := range []struct {
		name    string
		spec    map[string]any
		want    *PodGroup
		wantErr string
	}{
		{name: "both fields", spec: map[string]any{"minMember": int64(3), "scheduleTimeoutSeconds": int64(10)},
			want: &PodGroup{Namespace: "ns", Name: "pg", MinMember: i32(3), ScheduleTimeoutSeconds: i32(10)}},
		{name: "no spec fields", spec: map[string]any{}, want: &PodGroup{Namespace: "ns", Name: "pg"}},
		{name: "no spec", want: &PodGroup{Namespace: "ns", Name: "pg"}},
		{name: "minResources", spec: map[string]any{"minMember": int64(2), "minResources": map[string]any{"cpu": "4", "memory": "1Gi", "pods": int64(3)}},
			want: &PodGroup{Namespace: "ns", Name: "pg", MinMember: i32(2), MinResources: corev1.ResourceList{
				"cpu": resource.MustParse("4"), "memory": resource.MustParse("1Gi"), "pods": resource.MustParse("3")}}},
		{name: "minResources not a quantity", spec: map[string]any{"minResources": map[string]any{"cpu": "lots"}},
			wantErr: `PodGroup ns/pg: spec.minResources.cpu is "lots", not a quantity`},
		{name: "integral float", spec: map[string]any{"minMember": float64(4)},
			want: &PodGroup{Namespace: "ns", Name: "pg", MinMember: i32(4)}},
		{name: "fraction", spec: map[string]any{"minMember": 2.5}, wantErr: "PodGroup ns/pg: spec.minMember is 2.5, not an integer"},
		{name: "string", spec: map[string]any{"minMember": "3"}, wantErr: `PodGroup ns/pg: spec.minMember is "3", not an integer`},
		{name: "beyond int32", spec: map[string]any{"scheduleTimeoutSeconds": int64(1) << 40},
			wantErr: "PodGroup ns/pg: spec.scheduleTimeoutSeconds is 1099511627776, beyond a 32-bit integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := obj(tc.spec)
			if tc.spec == nil {
				delete(u.Object, "spec")
			}
			got, err := PodGroupFromUnstructured(u)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(PodGroup{}, "Object")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	r := Requirement{Key: Key{LabelPodGroup, "ns", "g"}, Min: 3, MinField: "minAvailable"}
	for _, tc := range []struct {
		count int
		want  string
	}{
		{1, "pod group ns/g has 1 of 3 pods (minAvailable 3)"},
		{2, "pod group ns/g has 2 of 3 pods (minAvailable 3)"},
		{3, ""}, // quorum
		{5, ""}, // more than the minimum
	} {
		if got := r.Check(tc.count); got != tc.want {
			t.Errorf("Check(%d) = %q, want %q", tc.count, got, tc.want)
		}
	}
	pg := Requirement{Key: Key{LabelPodGroupName, "ns", "pg"}, Min: 2, MinField: "minMember"}
	if got, want := pg.Check(1), "pod group ns/pg has 1 of 2 pods (minMember 2)"; got != want {
		t.Errorf("Check(1) = %q, want %q", got, want)
	}
	if got := (Requirement{Min: 0}).Check(0); got != "" {
		t.Errorf("minimum 0: %q, want no reason", got)
	}
}

func TestCheckGated(t *testing.T) {
	r := Requirement{Key: Key{LabelPodGroupName, "ns", "pg"}, Min: 3, MinField: "minMember"}
	if got, want := r.CheckGated(2, 1), "pod group ns/pg has 2 of 3 pods (minMember 3) and 1 more with scheduling gates"; got != want {
		t.Errorf("CheckGated(2, 1) = %q, want %q", got, want)
	}
	if got := r.CheckGated(3, 4); got != "" {
		t.Errorf("CheckGated(3, 4) = %q: gated pods beyond the minimum hold nothing back", got)
	}
}

func TestCheckMinResources(t *testing.T) {
	r := Requirement{Key: Key{LabelPodGroupName, "ns", "pg"}, Min: 3, MinField: "minMember",
		MinResources: corev1.ResourceList{"cpu": resource.MustParse("4"), "memory": resource.MustParse("2Gi")}}
	node := func(cpu, mem, pods string) corev1.ResourceList {
		return corev1.ResourceList{"cpu": resource.MustParse(cpu), "memory": resource.MustParse(mem), "pods": resource.MustParse(pods)}
	}
	for _, tc := range []struct {
		name string
		free []corev1.ResourceList
		want string
	}{
		// 2+2 cpu, 1+1 Gi, 2+2 pods: exactly enough.
		{"fits summed over nodes", []corev1.ResourceList{node("2", "1Gi", "2"), node("2", "1Gi", "2")}, ""},
		// 1.5+2 = 3.5 cpu < 4; memory 2Gi ok; pods 4 >= 3.
		{"cpu short", []corev1.ResourceList{node("1500m", "1Gi", "2"), node("2", "1Gi", "2")},
			"pod group ns/pg: spec.minResources does not fit in the cluster's free room (summed over 2 nodes): cpu 4 requested, 3500m free"},
		// pods: the minimum (3) is asked too; 1+1 = 2 slots. A negative free (overcommitted) counts 0.
		{"pod slots short, overcommitted node", []corev1.ResourceList{node("-1", "4Gi", "1"), node("5", "4Gi", "1")},
			"pod group ns/pg: spec.minResources does not fit in the cluster's free room (summed over 2 nodes): pods 3 requested, 2 free"},
		{"no nodes", nil,
			"pod group ns/pg: spec.minResources does not fit in the cluster's free room (summed over 0 nodes): cpu 4 requested, 0 free; memory 2Gi requested, 0 free; pods 3 requested, 0 free"},
	} {
		if got := r.CheckMinResources(tc.free); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	if got := (Requirement{Min: 3}).CheckMinResources(nil); got != "" {
		t.Errorf("no minResources: %q", got)
	}
}

// A pod of a native pod group (spec.schedulingGroup) is in none of our groups, whatever its
// labels: no lookup of a scheduling.x-k8s.io PodGroup of that name, no count, no rejection; one
// that carries our label too is told which group governs it.
func TestNativeGroup(t *testing.T) {
	name := "shared"
	native := pod(map[string]string{"app": "x"})
	native.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
	both := pod(map[string]string{LabelPodGroupName: "shared"})
	both.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
	looked := false
	lookup := func(string, string) (*PodGroup, error) { looked = true; return nil, nil }
	for _, p := range []*corev1.Pod{native, both} {
		if _, in := KeyOf(p); in {
			t.Errorf("%v: counted in one of our groups", p.Labels)
		}
		if _, in, err := Resolve(p, lookup); in || err != nil {
			t.Errorf("%v: Resolve in=%v err=%v, want left alone", p.Labels, in, err)
		}
	}
	if looked {
		t.Error("a native group's name was looked up among scheduling.x-k8s.io PodGroups")
	}
	if got := Overruled(native); got != "" {
		t.Errorf("native only: %q", got)
	}
	want := "pod is in the native pod group ns/shared (spec.schedulingGroup, scheduling.k8s.io) and names pod group ns/shared " +
		"(label scheduling.x-k8s.io/pod-group): the native group governs it (kube-scheduler's GangScheduling); the label is ignored"
	if got := Overruled(both); got != want {
		t.Errorf("both:\n got %q\nwant %q", got, want)
	}
	c := NewCounts()
	c.Set(both)
	if c.Groups() != 0 {
		t.Error("a natively grouped pod was counted")
	}
}
