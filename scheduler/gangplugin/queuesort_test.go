package gangplugin

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	gang "github.com/kube-safe-scheduler/extender/agents/gang/core"
)

// orderGroups: PodGroup "old" created at t0+1s, "young" at t0+10s (its name sorts first); riya
// group "r" whose oldest member was created at t0+3s; PodGroup "failed" created at t0, whose
// last failure was at t0+20s.
func orderGroups(t *testing.T) *Groups {
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for name, s := range map[string]int{"old": 1, "young": 10, "failed": 0} {
		u := unstructuredOf(map[string]any{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
			"metadata": map[string]any{"name": name, "namespace": "default",
				"creationTimestamp": metav1.NewTime(t0.Add(time.Duration(s) * time.Second)).UTC().Format(time.RFC3339)},
			"spec": map[string]any{"minMember": int64(2)}})
		if err := store.Add(u); err != nil {
			t.Fatal(err)
		}
	}
	g := newGroups()
	g.store = fakeInformer{store}
	g.counts.Set(mkPod("r-0", withLabels("podGroup", "r", "minAvailable", "2"), created(3)))
	g.now = func() time.Time { return t0.Add(20 * time.Second) }
	g.markFailed(gang.Key{Label: gang.LabelPodGroupName, Namespace: "default", Name: "failed"})
	return g
}

func pg(name string) podOpt { return withLabels(gang.LabelPodGroupName, name) }

// The order after priority, shared by Coscheduling and group-priority (where riya's label and QoS
// tie): the group's age for its members (its PodGroup's creation, or its last failure; a riya
// group's oldest member), the first queueing time for a pod in no group, then namespace/name.
var ageCases = []struct {
	name string
	a, b *corev1.Pod
	want bool // a before b
}{
	{"pods in no group: first queued first", mkPod("b", created(1)), mkPod("a", created(2)), true},
	{"pods in no group, queued together: by name", mkPod("a", created(1)), mkPod("b", created(1)), true},
	{"a group created before a lone pod goes first, its member created after it", mkPod("z", pg("old"), created(9)), mkPod("a", created(2)), true},
	{"a lone pod queued before the group's creation goes first", mkPod("z", created(0)), mkPod("a", pg("old"), created(9)), true},
	{"two groups: the older first, though its name sorts later", mkPod("a", pg("young"), created(11)), mkPod("b", pg("old"), created(12)), false},
	{"a riya group by its oldest member", mkPod("r-9", withLabels("podGroup", "r", "minAvailable", "2"), created(30)), mkPod("a", created(4)), true},
	{"a group's last failure puts it behind a pod queued since", mkPod("a", pg("failed")), mkPod("b", created(15)), false},
	{"a group's failure: before a pod queued after it", mkPod("a", pg("failed")), mkPod("b", created(25)), true},
	{"a PodGroup not read yet: its pod's own queueing time", mkPod("a", pg("ghost"), created(5)), mkPod("b", created(4)), false},
	{"one group's members: by name", mkPod("b", pg("old"), created(1)), mkPod("a", pg("old"), created(5)), false},
}

func TestCoschedulingLess(t *testing.T) {
	c := Coscheduling{&PodGroup{groups: orderGroups(t)}}
	cases := append([]struct {
		name string
		a, b *corev1.Pod
		want bool
	}{
		{"higher priority first, though younger", mkPod("a", prio(10), created(50)), mkPod("b", pg("old")), true},
		{"groupPriority and QoS are not Coscheduling's", mkPod("a", withLabels("groupPriority", "9"), guaranteed, created(5)), mkPod("b", created(1)), false},
	}, ageCases...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkLess(t, c, tc.a, tc.b, tc.want) })
	}
}

func TestGroupPriorityLess(t *testing.T) {
	gp := &GroupPriority{groups: orderGroups(t)}
	cases := append([]struct {
		name string
		a, b *corev1.Pod
		want bool
	}{
		{"higher groupPriority first, though created later", mkPod("a", withLabels("groupPriority", "10"), created(5)), mkPod("b", withLabels("groupPriority", "1")), true},
		{"lower groupPriority after", mkPod("a", withLabels("groupPriority", "1")), mkPod("b", withLabels("groupPriority", "10"), created(5)), false},
		{"missing groupPriority is 0", mkPod("a"), mkPod("b", withLabels("groupPriority", "1"), created(5)), false},
		{"bad groupPriority is 0", mkPod("a", withLabels("groupPriority", "x")), mkPod("b", withLabels("groupPriority", "-1"), created(5)), true},
		{"groupPriority before QoS", mkPod("a", withLabels("groupPriority", "2")), mkPod("b", withLabels("groupPriority", "1"), guaranteed), true},
		{"Guaranteed before BestEffort", mkPod("a", guaranteed, created(5)), mkPod("b"), true},
		{"BestEffort after Guaranteed", mkPod("a"), mkPod("b", guaranteed, created(5)), false},
		{"Guaranteed before Burstable", mkPod("a", guaranteed, created(5)), mkPod("b", burstable), true},
		{"Burstable before BestEffort", mkPod("a", burstable, created(5)), mkPod("b"), true},
		{"QoS before pod priority", mkPod("a", guaranteed), mkPod("b", prio(100)), true},
		{"higher pod priority first", mkPod("a", prio(100), created(5)), mkPod("b", prio(1)), true},
	}, ageCases...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkLess(t, gp, tc.a, tc.b, tc.want) })
	}
}

func checkLess(t *testing.T, pl fwk.QueueSortPlugin, a, b *corev1.Pod, want bool) {
	t.Helper()
	if got := pl.Less(queued(a), queued(b)); got != want {
		t.Errorf("Less(a, b) = %v, want %v", got, want)
	}
	if pl.Less(queued(a), queued(b)) && pl.Less(queued(b), queued(a)) {
		t.Error("Less holds both ways")
	}
}
