package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// bindingAgent binds pods to nodes whose name does not start with "bad" and remembers the binds;
// it keeps preemption candidates whose name does not start with "drop".
type bindingAgent struct {
	name  string
	binds *[]string
	off   bool // BindFunc returns nil
}

func (a bindingAgent) Name() string                        { return a.name }
func (bindingAgent) Filters() []framework.Filter           { return nil }
func (bindingAgent) Prioritizers() []framework.Prioritizer { return nil }
func (a bindingAgent) BindFunc() framework.BindFunc {
	if a.off {
		return nil
	}
	return a.bind
}

func (a bindingAgent) bind(_ context.Context, ns, name string, uid types.UID, node string) error {
	if strings.HasPrefix(node, "bad") {
		return errors.New("node " + node + " is bad")
	}
	*a.binds = append(*a.binds, ns+"/"+name+"/"+string(uid)+"->"+node)
	return nil
}

func (bindingAgent) Preempt(_ context.Context, _ *corev1.Pod, nodes []string) ([]bool, error) {
	keep := make([]bool, len(nodes))
	for i, n := range nodes {
		keep[i] = !strings.HasPrefix(n, "drop")
	}
	return keep, nil
}

var (
	_ framework.Binder    = bindingAgent{}
	_ framework.Preempter = bindingAgent{}
)

func newAgentsFixture(t *testing.T, agents ...framework.Agent) *fixture {
	t.Helper()
	log := logrus.New()
	log.SetOutput(&strings.Builder{})
	reg := prometheus.NewRegistry()
	h, err := New(agents, Options{Log: log, Registry: reg})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &fixture{t: t, handler: h, reg: reg}
}

func TestBindRoutesToTheBindingAgent(t *testing.T) {
	var binds []string
	f := newAgentsFixture(t, testAgent{}, bindingAgent{name: "binder", binds: &binds})
	res := decode[extenderv1.ExtenderBindingResult](t, f.post("/scheduler/bind",
		extenderv1.ExtenderBindingArgs{PodName: "p", PodNamespace: "ns", PodUID: "u", Node: "a"}))
	if res.Error != "" {
		t.Errorf("Error = %q", res.Error)
	}
	if diff := cmp.Diff([]string{"ns/p/u->a"}, binds); diff != "" {
		t.Errorf("binds (-want +got):\n%s", diff)
	}
	res = decode[extenderv1.ExtenderBindingResult](t, f.post("/scheduler/bind",
		extenderv1.ExtenderBindingArgs{PodName: "p", PodNamespace: "ns", PodUID: "u", Node: "bad-1"}))
	if want := "binding pod ns/p to node bad-1: node bad-1 is bad"; res.Error != want {
		t.Errorf("Error = %q, want %q", res.Error, want)
	}
	metrics := f.do("GET", "/metrics", "", nil).Body.String()
	for _, want := range []string{
		`extender_requests_total{agent="binder",code="200",function="bind",verb="bind"} 2`,
		`extender_request_errors_total{agent="binder",function="bind",verb="bind"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if msg := errorOf(t, f.post("/scheduler/bind", extenderv1.ExtenderBindingArgs{PodName: "p"}), http.StatusBadRequest); !strings.Contains(msg, "PodName and Node are required") {
		t.Errorf("message %q", msg)
	}
}

func TestTwoBindersAreAnError(t *testing.T) {
	var binds []string
	_, err := New([]framework.Agent{bindingAgent{name: "one", binds: &binds}, bindingAgent{name: "two", binds: &binds}}, Options{})
	if err == nil || !strings.Contains(err.Error(), `agents "one" and "two" both bind pods`) {
		t.Errorf("err = %v", err)
	}
	// An agent configured not to bind is no binder.
	f := newAgentsFixture(t, bindingAgent{name: "one", binds: &binds}, bindingAgent{name: "two", binds: &binds, off: true})
	if res := decode[extenderv1.ExtenderBindingResult](t, f.post("/scheduler/bind",
		extenderv1.ExtenderBindingArgs{PodName: "p", PodNamespace: "ns", Node: "a"})); res.Error != "" || len(binds) != 1 {
		t.Errorf("Error %q, binds %q", res.Error, binds)
	}
	f = newAgentsFixture(t, bindingAgent{name: "two", binds: &binds, off: true})
	if res := decode[extenderv1.ExtenderBindingResult](t, f.post("/scheduler/bind",
		extenderv1.ExtenderBindingArgs{PodName: "p", PodNamespace: "ns", Node: "a"})); !strings.Contains(res.Error, "binding is not supported") {
		t.Errorf("Error %q", res.Error)
	}
}

func TestPreemptionKeepsWhatPreemptersKeep(t *testing.T) {
	var binds []string
	f := newAgentsFixture(t, testAgent{}, bindingAgent{name: "binder", binds: &binds})
	victim := &corev1.Pod{}
	victim.UID = "uid-v"
	full := decode[extenderv1.ExtenderPreemptionResult](t, f.post("/scheduler/preemption", extenderv1.ExtenderPreemptionArgs{
		Pod: fixtures.MakePod().Name("p").Namespace("ns").UID("uid-p").Obj(),
		NodeNameToVictims: map[string]*extenderv1.Victims{
			"a":      {Pods: []*corev1.Pod{victim}, NumPDBViolations: 1},
			"drop-b": {Pods: []*corev1.Pod{victim}},
		},
	}))
	want := map[string]*extenderv1.MetaVictims{"a": {Pods: []*extenderv1.MetaPod{{UID: "uid-v"}}, NumPDBViolations: 1}}
	if diff := cmp.Diff(want, full.NodeNameToMetaVictims); diff != "" {
		t.Errorf("from Victims (-want +got):\n%s", diff)
	}
	meta := decode[extenderv1.ExtenderPreemptionResult](t, f.post("/scheduler/preemption", extenderv1.ExtenderPreemptionArgs{
		Pod: fixtures.MakePod().Name("p").Namespace("ns").UID("uid-p").Obj(),
		NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{
			"a":      {Pods: []*extenderv1.MetaPod{{UID: "uid-v"}}, NumPDBViolations: 1},
			"drop-c": {Pods: []*extenderv1.MetaPod{{UID: "uid-w"}}},
		},
	}))
	if diff := cmp.Diff(want, meta.NodeNameToMetaVictims); diff != "" {
		t.Errorf("from MetaVictims (-want +got):\n%s", diff)
	}
}

// failingPreempter cannot judge candidates.
type failingPreempter struct{ testAgent }

func (failingPreempter) Name() string { return "failing" }
func (failingPreempter) Preempt(context.Context, *corev1.Pod, []string) ([]bool, error) {
	return nil, errors.New("table not loaded")
}

func TestPreemptionErrorIsA500(t *testing.T) {
	f := newAgentsFixture(t, failingPreempter{})
	msg := errorOf(t, f.post("/scheduler/preemption", extenderv1.ExtenderPreemptionArgs{
		Pod: fixtures.MakePod().Name("p").Namespace("ns").UID("uid-p").Obj(), NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{"a": {}},
	}), http.StatusInternalServerError)
	if msg != "agent failing: preemption failed: table not loaded" {
		t.Errorf("message %q", msg)
	}
}
