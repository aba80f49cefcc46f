package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

var metaGet = metav1.GetOptions{}

// pluginSchedulerName is the profile of the plugin scheduler the demo runs after the extenders.
const pluginSchedulerName = "kube-safe-scheduler"

// pluginConfig runs, as kube-safe-scheduler's plugins (scheduler/, yamlfiles/scheduler.plugins.yaml),
// the agent functions demo.yaml attaches as extenders, with the same weights; the agents keep
// their defaults, as the sidecars do (but telemetry's shorter sync period and hold).
const pluginConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: ` + pluginSchedulerName + `
  plugins:
    multiPoint:
      enabled:
      - {name: safe-overload, weight: 2}
      - {name: safe-balance, weight: 1}
      - {name: congestion, weight: 1}
      - {name: pigeon-holing, weight: 2}
      - {name: template-label}
      - {name: template-score, weight: 1}
      - {name: telemetry-policy, weight: 1}
`

// placeWithPlugins deletes the pods the extenders placed, then schedules the same workload, one
// pod at a time, through kube-safe-scheduler, and prints both placements side by side and how
// they compare.
func placeWithPlugins(s *harness.Session, c *harness.Cluster, byExtenders map[string]string) {
	for _, spec := range workload {
		c.DeletePod(s, "default", spec.Name)
	}
	for _, spec := range workload {
		for deadline := time.Now().Add(time.Minute); ; {
			if _, err := c.Client.CoreV1().Pods("default").Get(s.Context(), spec.Name, metaGet); err != nil {
				break
			}
			if time.Now().After(deadline) {
				s.Fatalf("pod %s is still there a minute after its deletion", spec.Name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	c.StartScheduler(s, harness.SchedulerOptions{Name: pluginSchedulerName, Config: []byte(pluginConfig),
		Binary: harness.BuildPluginScheduler(s), Args: []string{"--v=2"}})

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "POD\tEXTENDERS (my-scheduler)\tPLUGINS (kube-safe-scheduler)\t")
	same, pendingBoth := 0, 0
	for _, spec := range workload {
		spec.SchedulerName = pluginSchedulerName
		c.CreatePod(s, spec)
		chosen, _ := waitForOutcome(s, c, spec.Name)
		ext := byExtenders[spec.Name]
		mark := ""
		switch {
		case chosen == ext && chosen == "":
			pendingBoth++
			same++
		case chosen == ext:
			same++
		default:
			mark = "differs"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", spec.Name, orPending(ext), orPending(chosen), mark)
	}
	w.Flush()
	fmt.Printf("\nPlugin mode placed %d of %d pods as the extenders did (%d pending in both)", same, len(workload), pendingBoth)
	if same < len(workload) {
		fmt.Print("; for what can differ (the scheduler's snapshot against the extender's cache, the candidates " +
			"each function sees) see docs/plugin-mode.md, \"Where the two modes can differ\"")
	}
	fmt.Println(".")
}

func orPending(node string) string {
	if node == "" {
		return "pending"
	}
	return node
}
