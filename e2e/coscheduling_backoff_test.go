package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// scheduleAttempts reads scheduler_schedule_attempts_total (every result) for profile from the
// scheduler's /metrics.
func scheduleAttempts(t *testing.T, s *harness.Scheduler, profile string) float64 {
	t.Helper()
	n, err := attemptsCounted(s.Port, `profile="`+profile+`"`)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// attemptsCounted sums kube-scheduler's scheduler_schedule_attempts_total series (on its secure
// port, port) whose labels contain match (a label and its value, as `result="error"`).
func attemptsCounted(port int, match string) (float64, error) {
	ss, err := harness.SchedulerMetrics(port)
	if err != nil {
		return 0, err
	}
	return ss.Sum("scheduler_schedule_attempts_total", func(s harness.Sample) string {
		if strings.Contains(s.Labels, match) {
			return "counted"
		}
		return ""
	})["counted"], nil
}

// TestCoschedulingBackoffAttempts: a group that can never fit (minMember 3 of 1 cpu on a 2-cpu
// node, all three created) is not retried in a tight loop. Its scheduling attempts over a minute
// are measured side by side with podGroupBackoffSeconds 0 (the default: the group backs off as
// kube-scheduler backs off a pod, 1 s doubling to 10 s; without it the group was tried 2440
// times in a minute, as kube-scheduler 1.37 pops a pod early from its backoff queue when nothing
// else waits) and 20.
func TestCoschedulingBackoffAttempts(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	attempts := map[int]float64{}
	t.Run("group", func(t *testing.T) {
		for _, backoff := range []int{0, 20} {
			t.Run(fmt.Sprintf("podGroupBackoffSeconds=%d", backoff), func(t *testing.T) {
				t.Parallel()
				c, sa := startWithPluginServiceAccount(t)
				c.ApplyCRDFile(t, filepath.Join(repoRoot(t), "yamlfiles", "podgroup-crd.yaml"))
				c.CreateNode(t, harness.NodeSpec{Name: "n1", CPU: "2"})
				d := withPlugins(t, []string{gangPodGroup}, map[string]map[string]any{gangPodGroup: {"podGroupBackoffSeconds": backoff}})
				r := c.RunDeployment(t, d, harness.RunOptions{Kubeconfig: sa,
					SchedulerArgs: []string{"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"}})
				podGroup(t, c, "never", `"minMember": 3, "scheduleTimeoutSeconds": 10`)
				for i := range 3 {
					c.CreatePod(t, member(gangModes[1], fmt.Sprintf("never-%d", i), "never", "1"))
				}
				start := time.Now()
				time.Sleep(time.Minute)
				n := scheduleAttempts(t, r.Scheduler, pluginSchedulerName)
				mu.Lock()
				attempts[backoff] = n
				mu.Unlock()
				t.Logf("podGroupBackoffSeconds %d: %.0f scheduling attempts of the 3 members in %.0fs", backoff, n, time.Since(start).Seconds())
				for i := range 3 {
					if node := c.PodNode(t, "default", fmt.Sprintf("never-%d", i)); node != "" {
						t.Errorf("never-%d bound to %s", i, node)
					}
				}
			})
		}
	})
	// Default: about 9 rounds in a minute (1+2+4+8+10+10+10+10 s), each a few attempts plus
	// the PreFilter rejections of members woken by the releases; 20 s: about 3 rounds.
	for backoff, most := range map[int]float64{0: 150, 20: 80} {
		if n := attempts[backoff]; n == 0 || n > most {
			t.Errorf("with podGroupBackoffSeconds %d: %.0f attempts in a minute, want 1..%.0f", backoff, n, most)
		}
	}
}
