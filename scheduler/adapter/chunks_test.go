package adapter_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/fixtures"
)

// TestChunkedVerdictsAreTheWholeListVerdicts: Filter judges the nodes chunk by chunk as the
// scheduler asks about them (from several goroutines, in any order, some nodes never); each
// verdict is the one the agent's filter function gives when it judges every node in one call,
// code and reason. 203 nodes of annotator-like statistics (13 chunks, the last one short).
func TestChunkedVerdictsAreTheWholeListVerdicts(t *testing.T) {
	now := time.Now()
	var nodes []*corev1.Node
	for i := range 203 {
		n := fixtures.Node(i, fixtures.UsageStatistics(i, 16000, 64<<30, now))
		n.ResourceVersion = strconv.Itoa(i + 1)
		nodes = append(nodes, &n)
	}
	var safe framework.Agent
	for _, r := range agents.All {
		if r.Name == "safe" {
			a, err := r.New(r.NewConfig(), framework.NewHandle(nil))
			if err != nil {
				t.Fatal(err)
			}
			safe = a
		}
	}
	fw, snap := mustFramework(t, newAdapter(t, agents.All...), profileYAML("multiPoint:\n  enabled:\n  - name: safe-overload\n", ""), nodes, nil)
	infos, _ := snap.NodeInfos().List()
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 5 {
		pod := fixtures.Pod("p"+strconv.Itoa(round), strconv.Itoa(100+r.IntN(3000))+"m", strconv.Itoa(128+r.IntN(8000))+"Mi")
		views := make([]*corev1.Node, len(infos))
		for i, ni := range infos {
			views[i] = framework.NodeView(ni.Node())
		}
		whole, err := safe.Filters()[0].Func(t.Context(), pod, views)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		rejected := 0
		for i, v := range whole {
			want[views[i].Name] = "Success: "
			if !v.Passes() {
				want[views[i].Name] = "Unschedulable: " + v.Reason
				rejected++
			}
		}
		if rejected == 0 || rejected == len(whole) {
			t.Fatalf("round %d: %d of %d nodes rejected: the test needs both", round, rejected, len(whole))
		}

		state := schedframework.NewCycleState()
		if _, s, _ := fw.RunPreFilterPlugins(t.Context(), state, pod); !s.IsSuccess() {
			t.Fatal(s)
		}
		order := r.Perm(len(infos))[:len(infos)*2/3] // a third never asked about
		got := make([]string, len(order))
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for k := w; k < len(order); k += 8 {
					s := fw.RunFilterPlugins(t.Context(), state, pod, infos[order[k]])
					got[k] = "Success: "
					if s != nil {
						got[k] = s.Code().String() + ": " + strings.Join(s.Reasons(), "; ")
					}
				}
			})
		}
		wg.Wait()
		for k, i := range order {
			name := infos[i].Node().Name
			if got[k] != want[name] {
				t.Errorf("round %d, node %s: %q, judged with every node %q", round, name, got[k], want[name])
			}
		}
	}
}
