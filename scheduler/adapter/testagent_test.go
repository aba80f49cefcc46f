package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
)

// The test agent reads an integer "value" from a node label and offers:
//   - test-fit, a filter and a prioritizer of one name: the filter rejects a node whose value is
//     below the threshold (and, unresolvably, a node without the label); the prioritizer scores
//     the value itself, per node;
//   - test-rank, a whole-cluster prioritizer: 10 for the candidates of highest value, 0 for
//     those of lowest, linear between (so a node's score depends on every candidate).
//
// A pod annotated test/fail makes every function fail.
const (
	testAgentName = "test"
	testFit       = "test-fit"
	testRank      = "test-rank"
	failAnno      = "test/fail"
)

type testConfig struct {
	Threshold int    `json:"threshold" env:"TEST_THRESHOLD" flag:"test-threshold" help:"lowest value a node may have"`
	Label     string `json:"label" env:"TEST_LABEL" flag:"test-label" help:"node label holding the value"`
}

func defaultTestConfig() testConfig { return testConfig{Threshold: 3, Label: "test/value"} }

func (c testConfig) Validate() error {
	var errs []error
	errs = append(errs, settings.Range("threshold", c.Threshold, 0, 10))
	if c.Label == "" {
		errs = append(errs, settings.Fieldf("label", "must not be empty"))
	}
	return errors.Join(errs...)
}

type testAgent struct {
	cfg testConfig
	// pods is the handle's NodePods, against which checkPositions holds the positions' generations.
	pods framework.NodePods
}

var testRegistration = framework.Register(testAgentName, defaultTestConfig, newTestAgent, testOffer)

var testOffer = framework.Offer{Filters: []string{testFit}, Prioritizers: []framework.Weighted{{Name: testFit, Weight: 1}, {Name: testRank, Weight: 1}}}

func newTestAgent(cfg testConfig, h framework.Handle) (*testAgent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid test config: %w", err)
	}
	return &testAgent{cfg: cfg, pods: h.NodePods}, nil
}

func (a *testAgent) Name() string { return testAgentName }

func (a *testAgent) Filters() []framework.Filter {
	return []framework.Filter{{Name: testFit, Func: a.filter}}
}

func (a *testAgent) Prioritizers() []framework.Prioritizer {
	return []framework.Prioritizer{{Name: testFit, Func: a.score}, {Name: testRank, Func: a.rank, WholeList: true}}
}

func (a *testAgent) value(n *corev1.Node) (int64, bool) {
	v, err := strconv.ParseInt(n.Labels[a.cfg.Label], 10, 64)
	return v, err == nil
}

// testPositioned counts the calls whose nodes came with their framework.Positions, and
// testMisplaced holds the last error checkPositions found (a prioritizer's error only zeroes
// its scores: the tests read it here).
var (
	testPositioned atomic.Int64
	testMisplaced  atomic.Pointer[error]
)

// checkPositions fails a call whose framework.Positions (when ctx carries them) do not place
// its nodes: each node the very object at its position of the list, the generation there the
// one NodePods gives by name. Every test of the adapter that calls the test agent checks them.
func (a *testAgent) checkPositions(ctx context.Context, nodes []*corev1.Node) error {
	err := a.misplaced(ctx, nodes)
	if err != nil {
		testMisplaced.Store(&err)
	}
	return err
}

func (a *testAgent) misplaced(ctx context.Context, nodes []*corev1.Node) error {
	p := framework.PositionsOf(ctx)
	if p == nil {
		return nil
	}
	testPositioned.Add(1)
	if len(p.At) != len(nodes) {
		return fmt.Errorf("positions of %d nodes for a call of %d", len(p.At), len(nodes))
	}
	for i, n := range nodes {
		j := int(p.At[i])
		if j < 0 || j >= p.List.Len() || p.List.Node(j) != n {
			return fmt.Errorf("node %s is not at its position %d", n.Name, j)
		}
		if a.pods != nil && p.List.PodsGenerationAt(j) != a.pods.PodsGeneration(n.Name) {
			return fmt.Errorf("node %s: generation %d at its position, %d by name", n.Name, p.List.PodsGenerationAt(j), a.pods.PodsGeneration(n.Name))
		}
	}
	return nil
}

func (a *testAgent) filter(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
	if _, fail := pod.Annotations[failAnno]; fail {
		return nil, errors.New("the test source is down")
	}
	if err := a.checkPositions(ctx, nodes); err != nil {
		return nil, err
	}
	out := make([]framework.Verdict, len(nodes))
	for i, n := range nodes {
		v, ok := a.value(n)
		switch {
		case !ok:
			out[i] = framework.RejectUnresolvable("node has no label " + a.cfg.Label)
		case v < int64(a.cfg.Threshold):
			out[i] = framework.Reject(fmt.Sprintf("value %d is below the threshold %d", v, a.cfg.Threshold))
		}
	}
	return out, nil
}

// testScored counts the nodes the test agent's prioritizers have scored.
var testScored atomic.Int64

func (a *testAgent) score(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]int64, error) {
	if _, fail := pod.Annotations[failAnno]; fail {
		return nil, errors.New("the test source is down")
	}
	if err := a.checkPositions(ctx, nodes); err != nil {
		return nil, err
	}
	testScored.Add(int64(len(nodes)))
	out := make([]int64, len(nodes))
	for i, n := range nodes {
		out[i], _ = a.value(n)
	}
	return out, nil
}

func (a *testAgent) rank(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]int64, error) {
	if _, fail := pod.Annotations[failAnno]; fail {
		return nil, errors.New("the test source is down")
	}
	if err := a.checkPositions(ctx, nodes); err != nil {
		return nil, err
	}
	testScored.Add(int64(len(nodes)))
	values := make([]int64, len(nodes))
	lo, hi := int64(1<<62), int64(-1<<62)
	for i, n := range nodes {
		values[i], _ = a.value(n)
		lo, hi = min(lo, values[i]), max(hi, values[i])
	}
	out := make([]int64, len(nodes))
	for i, v := range values {
		if hi > lo {
			out[i] = framework.MaxScore * (v - lo) / (hi - lo)
		} else {
			out[i] = framework.MaxScore
		}
	}
	return out, nil
}

// The adapter hands the test agent's functions their nodes' framework.Positions in a cycle (the
// filter's chunks, the scores' chunks, the whole-list prioritizer), each placing its nodes
// (checkPositions fails the call otherwise), with pods on some nodes (generations differ).
func TestCallsCarryPositions(t *testing.T) {
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for i := range 50 {
		n := testNode(fmt.Sprintf("n%d", i), strconv.Itoa(i%10))
		n.ResourceVersion = strconv.Itoa(i + 1)
		nodes = append(nodes, n)
		for k := range i % 3 {
			p := testPod(fmt.Sprintf("p%d-%d", i, k), nil)
			p.Spec.NodeName = n.Name
			pods = append(pods, p)
		}
	}
	fw, snap := mustFramework(t, newAdapter(t, testRegistration), profileYAML(allPlugins, ""), nodes, pods)
	before := testPositioned.Load()
	for range 3 {
		state := schedframework.NewCycleState()
		pod := testPod("pod", nil)
		rejected, feasible := filterAll(t, fw, snap, state, pod)
		for name, s := range rejected {
			if !strings.Contains(s.Message(), "below the threshold") {
				t.Fatalf("%s: %v", name, s)
			}
		}
		if s := fw.RunPreScorePlugins(t.Context(), state, pod, feasible); !s.IsSuccess() {
			t.Fatal(s)
		}
		if _, s := fw.RunScorePlugins(t.Context(), state, pod, feasible); !s.IsSuccess() {
			t.Fatal(s)
		}
	}
	if testPositioned.Load() == before {
		t.Fatal("no call carried positions")
	}
	if err := testMisplaced.Load(); err != nil {
		t.Fatal(*err)
	}
}
