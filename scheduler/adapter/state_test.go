package adapter_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"
)

// Two cycles whose extension points interleave (as preemption's or batching's states do with a
// cycle's own) each read their own verdicts and scores, though a plugin remembers the state it
// wrote last (lastWrite): cycle A's pod passes and scores its node's value, cycle B's pod (the
// test agent fails for it) fails; A's prepared after B's, and asked first. Read from the state
// remembered last instead, a cycle gets the other's verdicts, judged with its own pod (B's
// chunk judged for A's pod passes B) or scores computed for the other's pod (A scores 0).
func TestCyclesReadTheirOwnState(t *testing.T) {
	nodes := []*corev1.Node{testNode("n0", "5"), testNode("n1", "7")}
	for _, tc := range []struct{ name, plugins, args, score string }{
		{"test-fit", "multiPoint:\n  enabled:\n  - name: test-fit\n", "", "test-fit"},
		{"agents", "multiPoint:\n  enabled:\n  - name: agents\n", "- name: agents\n  args:\n    functions: [{name: test-fit}]\n", "agents"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fw, snap := mustFramework(t, newAdapter(t, testRegistration), profileYAML(tc.plugins, tc.args), nodes, nil)
			infos, err := snap.NodeInfos().List()
			if err != nil {
				t.Fatal(err)
			}
			ok, failing := testPod("a", nil), testPod("b", map[string]string{failAnno: ""})
			a, b := schedframework.NewCycleState(), schedframework.NewCycleState()
			for _, c := range []struct {
				state fwk.CycleState
				pod   *corev1.Pod
			}{{b, failing}, {a, ok}} {
				if _, s, _ := fw.RunPreFilterPlugins(t.Context(), c.state, c.pod); !s.IsSuccess() {
					t.Fatalf("PreFilter %s: %v", c.pod.Name, s)
				}
			}
			if s := fw.RunFilterPlugins(t.Context(), b, failing, infos[0]); s.IsSuccess() {
				t.Errorf("Filter %s after %s's PreFilter: passes %s, want the filter's error", failing.Name, ok.Name, infos[0].Node().Name)
			}
			if s := fw.RunFilterPlugins(t.Context(), a, ok, infos[0]); !s.IsSuccess() {
				t.Errorf("Filter %s: %v, want a pass", ok.Name, s)
			}
			for _, c := range []struct {
				state fwk.CycleState
				pod   *corev1.Pod
			}{{a, ok}, {b, failing}} {
				if s := fw.RunPreScorePlugins(t.Context(), c.state, c.pod, infos); !s.IsSuccess() {
					t.Fatalf("PreScore %s: %v", c.pod.Name, s)
				}
			}
			scores := func(state fwk.CycleState, pod *corev1.Pod) int64 {
				list, s := fw.RunScorePlugins(t.Context(), state, pod, infos)
				if !s.IsSuccess() {
					t.Fatalf("Score %s: %v", pod.Name, s)
				}
				for _, n := range list {
					for _, ps := range n.Scores {
						if n.Name == "n1" && ps.Name == tc.score {
							return ps.Score
						}
					}
				}
				t.Fatalf("Score %s: no score of %s for n1", pod.Name, tc.score)
				return 0
			}
			if got := scores(a, ok); got != 70 {
				t.Errorf("%s scores n1 %d after %s's PreScore, want 70 (its value 7)", ok.Name, got, failing.Name)
			}
			if got := scores(b, failing); got != 0 {
				t.Errorf("%s scores n1 %d, want 0 (the prioritizer fails for it)", failing.Name, got)
			}
		})
	}
}
