package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

var metaGet = metav1.GetOptions{}

// pluginSchedulerName is the profile of the plugin scheduler the demo runs after the extenders.
const pluginSchedulerName = "kube-safe-scheduler"

// pluginConfig is plugin mode's counterpart of the extenders demo.yaml attaches (exts), as the
// chart and `extender config --mode plugin` write it: each function a plugin of
// kube-safe-scheduler (scheduler/), each prioritizer with its extender's weight, and the
// resources the scheduler ignores for an extender (managedResources, ignoredByScheduler: TAS
// pods' telemetry/scheduling) among NodeResourcesFit's ignoredResources, without which every TAS
// pod would be "Insufficient telemetry/scheduling". The agents keep their defaults, as the
// sidecars do.
func pluginConfig(exts []extender) ([]byte, error) {
	type plugin struct {
		Name   string `json:"name"`
		Weight int64  `json:"weight,omitempty"`
	}
	var enabled []plugin
	var ignored []string
	add := func(name string, weight int64) {
		if i := slices.IndexFunc(enabled, func(p plugin) bool { return p.Name == name }); i >= 0 {
			enabled[i].Weight = max(enabled[i].Weight, weight)
			return
		}
		enabled = append(enabled, plugin{name, weight})
	}
	for _, e := range exts {
		if e.filter != "" {
			add(e.filter, 0)
		}
		if e.prioritize != "" {
			add(e.prioritize, e.weight)
		}
		for _, r := range e.managed {
			if !slices.Contains(ignored, r) {
				ignored = append(ignored, r)
			}
		}
	}
	profile := map[string]any{
		"schedulerName": pluginSchedulerName,
		"plugins":       map[string]any{"multiPoint": map[string]any{"enabled": enabled}},
	}
	if len(ignored) > 0 {
		profile["pluginConfig"] = []any{map[string]any{"name": "NodeResourcesFit", "args": map[string]any{"ignoredResources": ignored}}}
	}
	return yaml.Marshal(map[string]any{
		"apiVersion":     "kubescheduler.config.k8s.io/v1",
		"kind":           "KubeSchedulerConfiguration",
		"leaderElection": map[string]any{"leaderElect": false},
		"profiles":       []any{profile},
	})
}

// placeWithPlugins deletes the pods the extenders placed, then schedules the same workload, one
// pod at a time, through kube-safe-scheduler, and prints both placements side by side, the
// scheduler's reason for every pod pending in either mode, and how they compare.
func placeWithPlugins(s *harness.Session, c *harness.Cluster, exts []extender, byExtenders, extReasons map[string]string) {
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
	cfg, err := pluginConfig(exts)
	if err != nil {
		s.Fatalf("plugin mode's configuration: %v", err)
	}
	c.StartScheduler(s, harness.SchedulerOptions{Name: pluginSchedulerName, Config: cfg,
		Binary: harness.BuildPluginScheduler(s), Args: []string{"--v=2"}})

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "POD\tEXTENDERS (my-scheduler)\tPLUGINS (kube-safe-scheduler)\t")
	var same, pendingBoth, otherNode, extOnly, pluginsOnly int
	var notes []string
	for _, spec := range workload {
		spec.SchedulerName = pluginSchedulerName
		c.CreatePod(s, spec)
		chosen, failure := waitForOutcome(s, c, spec.Name)
		ext := byExtenders[spec.Name]
		mark := ""
		switch {
		case chosen == ext && chosen == "":
			pendingBoth++
			same++
		case chosen == ext:
			same++
		case chosen == "":
			extOnly++
			mark = "differs: pending in plugin mode"
		case ext == "":
			pluginsOnly++
			mark = "differs: pending with the extenders"
		default:
			otherNode++
			mark = "differs: another node"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", spec.Name, orPending(ext), orPending(chosen), mark)
		if ext == "" {
			notes = append(notes, fmt.Sprintf("%s pending with the extenders: %s", spec.Name, extReasons[spec.Name]))
		}
		if chosen == "" {
			notes = append(notes, fmt.Sprintf("%s pending in plugin mode: %s", spec.Name, failure))
		}
	}
	w.Flush()
	fmt.Println()
	for _, n := range notes {
		fmt.Println("  " + n)
	}
	fmt.Printf("\nPlugin mode placed %d of %d pods as the extenders did (%d pending in both, for the reasons above)", same, len(workload), pendingBoth)
	if same < len(workload) {
		var why []string
		if extOnly > 0 {
			why = append(why, fmt.Sprintf("%d placed by the extenders only (plugin mode's reason above)", extOnly))
		}
		if pluginsOnly > 0 {
			why = append(why, fmt.Sprintf("%d placed by the plugins only (the extenders' reason above)", pluginsOnly))
		}
		if otherNode > 0 {
			why = append(why, fmt.Sprintf("%d on another node: the scheduler's snapshot against the extender's cache, the candidates "+
				"each function sees (docs/plugin-mode.md, \"Where the two modes can differ\")", otherNode))
		}
		verb := "differs"
		if len(workload)-same > 1 {
			verb = "differ"
		}
		fmt.Printf("; %d %s: %s", len(workload)-same, verb, strings.Join(why, "; "))
	}
	fmt.Println(".")
}

func orPending(node string) string {
	if node == "" {
		return "pending"
	}
	return node
}
