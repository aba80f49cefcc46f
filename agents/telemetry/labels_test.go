package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// clientCluster is a framework.Cluster reading the nodes of a fake clientset.
type clientCluster struct{ c *fake.Clientset }

func (k clientCluster) Node(name string) (*corev1.Node, bool) {
	n, err := k.c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	return n, err == nil
}
func (k clientCluster) HasSynced() bool                    { return true }
func (k clientCluster) Allocated(string) framework.Amounts { return framework.Amounts{} }
func (k clientCluster) Pods() []*corev1.Pod                { return nil }
func (k clientCluster) Nodes() []*corev1.Node {
	l, _ := k.c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	var out []*corev1.Node
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	return out
}

// reconcileLabels labels the violating node after the hold, leaves other labels alone, patches
// nothing once the labels are right, and removes the label of a deleted policy.
func TestReconcileLabels(t *testing.T) {
	client := fake.NewClientset(
		fixtures.MakeNode().Name("hot").Label("demo-policy", "mine-too").Obj(), // not "violating": not ours
		fixtures.MakeNode().Name("cool").Label("keep", "me").Obj(),
	)
	src := &fakeSource{data: map[string]map[string]Sample{"node_cpu": {"hot": {Value: 97, Time: t0}, "cool": {Value: 20, Time: t0}}}}
	a, _ := testAgent(t, DefaultConfig(), src, policyObject(t, demoPolicy))
	a.h.Client, a.nodes = client, clientCluster{client}.Nodes
	a.labels.hold = 0
	label := func(node string) map[string]string {
		n, _ := client.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
		return n.Labels
	}
	patches := func() int {
		n := 0
		for _, act := range client.Actions() {
			if _, ok := act.(k8stesting.PatchAction); ok {
				n++
			}
		}
		return n
	}
	a.refresh(t.Context())
	// hot (97 > 95) had demo-policy with another value: the agent sets it to violating (it is
	// the deschedule key), cool keeps its own label and gets none.
	if got := label("hot")["demo-policy"]; got != ViolatingValue {
		t.Fatalf("hot labels %v", label("hot"))
	}
	if got := label("cool"); len(got) != 1 || got["keep"] != "me" {
		t.Fatalf("cool labels %v", got)
	}
	before := patches()
	a.refresh(t.Context())
	if patches() != before {
		t.Errorf("a second refresh with nothing to change patched %d times", patches()-before)
	}
	// The policy is deleted: its label goes.
	a.policies.remove("default/demo-policy")
	a.now = func() time.Time { return t0.Add(time.Second) }
	a.refresh(t.Context())
	if _, ok := label("hot")["demo-policy"]; ok {
		t.Errorf("the deleted policy's label stays: %v", label("hot"))
	}
}

// The labels policies want: deschedule where violated, labeling labels of the rules that hold
// on a fresh value.
func TestWantedLabels(t *testing.T) {
	p, err := ParsePolicy(policyObject(t, `{metadata: {name: gpu, namespace: ns}, spec: {strategies: {
  deschedule: {rules: [{metricname: temp, operator: GreaterThan, target: 80}]},
  labeling: {rules: [
    {metricname: temp, operator: LessThan, target: 50, labels: ["cool=true"]},
    {metricname: power, operator: GreaterThan, target: 100, labels: ["power=high", "watch=yes"]}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	v := Values{
		"temp":  {"a": {Value: 90, Time: t0}, "b": {Value: 40, Time: t0}, "c": {Value: 40, Time: t0.Add(-time.Hour)}},
		"power": {"a": {Value: 150, Time: t0}, "b": {Value: 50, Time: t0}},
	}
	for node, want := range map[string]map[string]string{
		// 90 > 80 violates deschedule; 150 > 100 labels power and watch.
		"a": {"gpu": ViolatingValue, LabelingPrefix + "gpu/power": "high", LabelingPrefix + "gpu/watch": "yes"},
		"b": {LabelingPrefix + "gpu/cool": "true"},
		"c": {}, // 40 < 50 holds, but the value is stale
	} {
		if diff := cmp.Diff(want, wantedLabels([]*Policy{p}, v, node, t0, time.Minute)); diff != "" {
			t.Errorf("node %s (-want +got):\n%s", node, diff)
		}
	}
}

// labeling follows TAS: an allOf strategy labels only where every rule holds; rules setting
// one key: the largest value among GreaterThan rules wins, the smallest among LessThan rules,
// the first on a tie, for Equals, or across operators.
func TestLabelingLabels(t *testing.T) {
	v := Values{
		"a": {"n": {Value: 150, Time: t0}},
		"b": {"n": {Value: 300, Time: t0}},
		"c": {"n": {Value: 5, Time: t0}},
		"d": {"n": {Value: 2, Time: t0}},
		"s": {"n": {Value: 500, Time: t0.Add(-time.Hour)}}, // stale
	}
	key := func(k string) string { return LabelingPrefix + "p/" + k }
	for _, c := range []struct {
		name, strategy string
		want           map[string]string
	}{
		{"allOf, one rule fails: nothing", `{logicalOperator: allOf, rules: [
			{metricname: a, operator: GreaterThan, target: 100, labels: ["x=1"]},
			{metricname: c, operator: GreaterThan, target: 10, labels: ["y=1"]}]}`, nil},
		{"allOf, every rule holds: every label", `{logicalOperator: allOf, rules: [
			{metricname: a, operator: GreaterThan, target: 100, labels: ["x=1"]},
			{metricname: c, operator: LessThan, target: 10, labels: ["y=1"]}]}`, map[string]string{key("x"): "1", key("y"): "1"}},
		{"allOf, a stale rule never holds", `{logicalOperator: allOf, rules: [
			{metricname: a, operator: GreaterThan, target: 100, labels: ["x=1"]},
			{metricname: s, operator: GreaterThan, target: 10, labels: ["y=1"]}]}`, nil},
		{"anyOf: the rules that hold", `{rules: [
			{metricname: a, operator: GreaterThan, target: 100, labels: ["x=1"]},
			{metricname: c, operator: GreaterThan, target: 10, labels: ["y=1"]}]}`, map[string]string{key("x"): "1"}},
		// b 300 > a 150: b's value, wherever it is listed.
		{"GreaterThan: the largest value", `{rules: [
			{metricname: b, operator: GreaterThan, target: 100, labels: ["x=b"]},
			{metricname: a, operator: GreaterThan, target: 100, labels: ["x=a", "z=a"]}]}`, map[string]string{key("x"): "b", key("z"): "a"}},
		{"GreaterThan: the largest value, listed last", `{rules: [
			{metricname: a, operator: GreaterThan, target: 100, labels: ["x=a"]},
			{metricname: b, operator: GreaterThan, target: 100, labels: ["x=b"]}]}`, map[string]string{key("x"): "b"}},
		// d 2 < c 5.
		{"LessThan: the smallest value", `{rules: [
			{metricname: c, operator: LessThan, target: 10, labels: ["x=c"]},
			{metricname: d, operator: LessThan, target: 10, labels: ["x=d"]}]}`, map[string]string{key("x"): "d"}},
		{"tie: the first", `{rules: [
			{metricname: a, operator: GreaterThan, target: 100, labels: ["x=first"]},
			{metricname: a, operator: GreaterThan, target: 0, labels: ["x=second"]}]}`, map[string]string{key("x"): "first"}},
		{"Equals: the first", `{rules: [
			{metricname: c, operator: Equals, target: 5, labels: ["x=c"]},
			{metricname: d, operator: Equals, target: 2, labels: ["x=d"]}]}`, map[string]string{key("x"): "c"}},
		// TAS panics and writes no label of the policy; here the first rule's value.
		{"two operators: the first", `{rules: [
			{metricname: c, operator: LessThan, target: 10, labels: ["x=c", "y=c"]},
			{metricname: b, operator: GreaterThan, target: 100, labels: ["x=b"]}]}`, map[string]string{key("x"): "c", key("y"): "c"}},
		{"a key twice in one rule: the last", `{rules: [
			{metricname: a, operator: GreaterThan, target: 100, labels: ["x=1", "x=2"]}]}`, map[string]string{key("x"): "2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParsePolicy(policyObject(t, `{metadata: {name: p, namespace: ns}, spec: {strategies: {labeling: `+c.strategy+`}}}`))
			if err != nil {
				t.Fatal(err)
			}
			// The same answer whatever the map order: every run of the same input.
			for range 20 {
				got := labelingLabels(p, p.Strategies[Labeling], v, "n", t0, time.Minute)
				if diff := cmp.Diff(c.want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("(-want +got):\n%s", diff)
				}
			}
		})
	}
}
