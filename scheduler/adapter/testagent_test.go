package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"

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

type testAgent struct{ cfg testConfig }

var testRegistration = framework.Register(testAgentName, defaultTestConfig, newTestAgent, testOffer)

var testOffer = framework.Offer{Filters: []string{testFit}, Prioritizers: []framework.Weighted{{Name: testFit, Weight: 1}, {Name: testRank, Weight: 1}}}

func newTestAgent(cfg testConfig, _ framework.Handle) (*testAgent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid test config: %w", err)
	}
	return &testAgent{cfg: cfg}, nil
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

func (a *testAgent) filter(_ context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
	if _, fail := pod.Annotations[failAnno]; fail {
		return nil, errors.New("the test source is down")
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

func (a *testAgent) score(_ context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]int64, error) {
	if _, fail := pod.Annotations[failAnno]; fail {
		return nil, errors.New("the test source is down")
	}
	testScored.Add(int64(len(nodes)))
	out := make([]int64, len(nodes))
	for i, n := range nodes {
		out[i], _ = a.value(n)
	}
	return out, nil
}

func (a *testAgent) rank(_ context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]int64, error) {
	if _, fail := pod.Annotations[failAnno]; fail {
		return nil, errors.New("the test source is down")
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
