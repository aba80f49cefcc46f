package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-safe-scheduler/extender/agents/congestion"
	"github.com/kube-safe-scheduler/extender/e2e/harness"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

const schedulerName = "my-scheduler"

// demoNode is a node of the demo cluster: 8 cpu, 16 GiB, its measured usage (the safe agent's
// statistics), its congestion, its template label and score, and the requests already bound
// to it (allocation, which pigeon and kube-scheduler read).
type demoNode struct {
	name                    string
	meanFreeCPU, stdFreeCPU int64 // millicores
	meanFreeMem, stdFreeMem int64 // GiB/4 units, see quarterGi
	congestion              string
	templateScore           string // "" = no template label at all
	boundCPU, boundMem      string
	gpus                    string
}

// quarterGi is the unit of the memory statistics in the table below.
const quarterGi = int64(1) << 28

var demoNodes = []demoNode{
	{"node-1", 6800, 300, 52, 2, "10", "6", "1", "2Gi", ""},
	{"node-2", 4500, 500, 36, 4, "40", "8", "3", "6Gi", ""},
	{"node-3", 5200, 2200, 32, 12, "20", "9", "2", "4Gi", ""},
	{"node-4", 700, 250, 12, 2, "0", "10", "5", "10Gi", "2"}, // hot: measured usage near full
	{"node-5", 7400, 200, 56, 2, "85", "5", "", "", ""},
	{"node-6", 7600, 150, 60, 1, "5", "", "", "", ""}, // not allowed by the template agent
}

func createNodes(s *harness.Session, c *harness.Cluster) {
	for _, n := range demoNodes {
		ann := map[string]string{
			nodestats.MeanFreeCPU:    nodestats.FormatInt(n.meanFreeCPU),
			nodestats.StdFreeCPU:     nodestats.FormatInt(n.stdFreeCPU),
			nodestats.MeanFreeMemory: nodestats.FormatInt(n.meanFreeMem * quarterGi),
			nodestats.StdFreeMemory:  nodestats.FormatInt(n.stdFreeMem * quarterGi),
			congestion.Annotation:    n.congestion,
		}
		labels := map[string]string{}
		if n.templateScore != "" {
			labels["template.extender/allowed"] = "true"
			ann["template.extender/score"] = n.templateScore
		}
		var extra corev1.ResourceList
		if n.gpus != "" {
			extra = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n.gpus)}
		}
		c.CreateNode(s, harness.NodeSpec{Name: n.name, CPU: "8", Memory: "16Gi", Labels: labels, Annotations: ann, Extra: extra})
		if n.boundCPU != "" {
			c.CreatePod(s, harness.PodSpec{Name: "running-on-" + n.name, NodeName: n.name, CPU: n.boundCPU, Memory: n.boundMem})
		}
	}
}

func printNodes(s *harness.Session, c *harness.Cluster) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tALLOCATABLE\tMEASURED FREE CPU\tMEASURED FREE MEMORY\tCONGESTION\tTEMPLATE\tREQUESTED\tGPU")
	for _, n := range demoNodes {
		tmpl := "no label"
		if n.templateScore != "" {
			tmpl = "allowed, score " + n.templateScore
		}
		req := "-"
		if n.boundCPU != "" {
			req = n.boundCPU + " cpu, " + n.boundMem
		}
		gpu := "-"
		if n.gpus != "" {
			gpu = n.gpus
		}
		fmt.Fprintf(w, "%s\t8 cpu, 16Gi\t%dm ± %dm\t%s ± %s\t%s\t%s\t%s\t%s\n", n.name, n.meanFreeCPU, n.stdFreeCPU,
			gib(n.meanFreeMem), gib(n.stdFreeMem), n.congestion, tmpl, req, gpu)
	}
	w.Flush()
}

func gib(quarters int64) string { return strconv.FormatFloat(float64(quarters)/4, 'f', -1, 64) + "Gi" }

// extender is one entry of the running KubeSchedulerConfiguration's extenders list.
type extender struct {
	title              string
	filter, prioritize string
	weight             int64
	names              bool // nodeCacheCapable: send node names
	// managed: the extended resources the scheduler ignores for this extender
	// (managedResources with ignoredByScheduler)
	managed []string
	client  harness.ExtenderClient
}

// extendersOf reads the extenders the scheduler runs with, at their local addresses.
func extendersOf(run *harness.RunningDeployment) ([]extender, error) {
	var cfg struct {
		Extenders []struct {
			URLPrefix        string `json:"urlPrefix"`
			FilterVerb       string `json:"filterVerb"`
			PrioritizeVerb   string `json:"prioritizeVerb"`
			Weight           int64  `json:"weight"`
			NodeCacheCapable bool   `json:"nodeCacheCapable"`
			ManagedResources []struct {
				Name               string `json:"name"`
				IgnoredByScheduler bool   `json:"ignoredByScheduler"`
			} `json:"managedResources"`
		} `json:"extenders"`
	}
	if err := yaml.Unmarshal(run.Config, &cfg); err != nil {
		return nil, err
	}
	var out []extender
	for _, e := range cfg.Extenders {
		u, err := url.Parse(e.URLPrefix)
		if err != nil {
			return nil, err
		}
		x := extender{
			filter: strings.TrimPrefix(e.FilterVerb, "predicates/"), prioritize: strings.TrimPrefix(e.PrioritizeVerb, "priorities/"),
			weight: e.Weight, names: e.NodeCacheCapable, client: harness.ExtenderClient{BaseURL: u.Scheme + "://" + u.Host},
		}
		for _, r := range e.ManagedResources {
			if r.IgnoredByScheduler {
				x.managed = append(x.managed, r.Name)
			}
		}
		switch {
		case x.filter == "":
			x.title = x.prioritize
		case x.prioritize == "" || x.prioritize == x.filter:
			x.title = x.filter
		default:
			x.title = x.filter + "/" + x.prioritize[strings.LastIndex(x.prioritize, "-")+1:]
		}
		out = append(out, x)
	}
	return out, nil
}

// workload is the sample: web and api replicas, a cache, batch jobs and a GPU job.
// tasResource is the extended resource TAS pods request; the telemetry extender manages it
// (managedResources, ignoredByScheduler), so no node needs it.
var tasResource = corev1.ResourceList{"telemetry/scheduling": resource.MustParse("1")}

var workload = []harness.PodSpec{
	{Name: "web-1", CPU: "250m", Memory: "256Mi"},
	{Name: "web-2", CPU: "250m", Memory: "256Mi"},
	{Name: "web-3", CPU: "250m", Memory: "256Mi"},
	{Name: "api-1", CPU: "500m", Memory: "1Gi"},
	{Name: "api-2", CPU: "500m", Memory: "1Gi"},
	{Name: "cache-1", CPU: "1", Memory: "4Gi"},
	{Name: "batch-1", CPU: "2", Memory: "4Gi"},
	{Name: "batch-2", CPU: "2", Memory: "4Gi"},
	{Name: "train-1", CPU: "1", Memory: "2Gi", Extra: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}},
	// Pods following the TASPolicy demo-policy (telemetry agent), requesting telemetry/scheduling
	// as TAS pods do.
	{Name: "tas-1", CPU: "250m", Memory: "256Mi", Labels: map[string]string{"telemetry-policy": "demo-policy"}, Extra: tasResource},
	{Name: "tas-2", CPU: "250m", Memory: "256Mi", Labels: map[string]string{"telemetry-policy": "demo-policy"}, Extra: tasResource},
}

// judgement is what every extender says about every node for one pod.
type judgement struct {
	reject map[string]map[string]string // extender title -> node -> reason
	score  map[string]map[string]int64  // extender title -> node -> score
}

func judge(ctx context.Context, exts []extender, pod *corev1.Pod, nodes []corev1.Node) (judgement, error) {
	j := judgement{reject: map[string]map[string]string{}, score: map[string]map[string]int64{}}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	for _, e := range exts {
		args := &extenderv1.ExtenderArgs{Pod: pod}
		if e.names {
			args.NodeNames = &names
		} else {
			args.Nodes = &corev1.NodeList{Items: nodes}
		}
		if e.filter != "" {
			res, err := e.client.Filter(ctx, e.filter, args)
			if err != nil {
				return j, err
			}
			if res.Error != "" {
				return j, fmt.Errorf("filter %s: %s", e.filter, res.Error)
			}
			j.reject[e.title] = map[string]string{}
			for n, r := range res.FailedNodes {
				j.reject[e.title][n] = r
			}
			for n, r := range res.FailedAndUnresolvableNodes {
				j.reject[e.title][n] = r
			}
		}
		if e.prioritize != "" {
			list, err := e.client.Prioritize(ctx, e.prioritize, args)
			if err != nil {
				return j, err
			}
			j.score[e.title] = map[string]int64{}
			for _, hp := range list {
				j.score[e.title][hp.Host] = hp.Score
			}
		}
	}
	return j, nil
}

func (j judgement) passes(node string) bool {
	for _, r := range j.reject {
		if _, ok := r[node]; ok {
			return false
		}
	}
	return true
}

// total is the extenders' weighted sum for a node, as kube-scheduler adds it (before its own
// factor of 10 and its plugins' scores).
func (j judgement) total(exts []extender, node string) int64 {
	var t int64
	for _, e := range exts {
		if s, ok := j.score[e.title]; ok {
			t += e.weight * s[node]
		}
	}
	return t
}

func (j judgement) cell(e extender, node string) string {
	var parts []string
	if r, ok := j.reject[e.title]; ok {
		if _, rejected := r[node]; rejected {
			parts = append(parts, "reject")
		} else {
			parts = append(parts, "pass")
		}
	}
	if s, ok := j.score[e.title]; ok {
		parts = append(parts, strconv.FormatInt(s[node], 10))
	}
	return strings.Join(parts, " ")
}

// placeWorkload schedules the workload through the extenders and prints the table; it returns
// where each pod went ("" for a pending pod) and, for a pending pod, the scheduler's reason.
func placeWorkload(s *harness.Session, c *harness.Cluster, exts []extender) (placed, reasons map[string]string) {
	placed, reasons = map[string]string{}, map[string]string{}
	ctx := s.Context()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	header := "POD\tNODE\t"
	for _, e := range exts {
		header += fmt.Sprintf("%s (w%d)\t", e.title, e.weight)
	}
	fmt.Fprintln(w, header+"Σ w·score")
	var notes []string
	for _, spec := range workload {
		spec.SchedulerName = schedulerName
		pod, err := spec.Pod()
		if err != nil {
			s.Fatalf("%v", err)
		}
		nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			s.Fatalf("listing nodes: %v", err)
		}
		j, err := judge(ctx, exts, pod, nodes.Items)
		if err != nil {
			s.Fatalf("asking the agents about %s: %v", spec.Name, err)
		}
		c.CreatePod(s, spec)
		chosen, failure := waitForOutcome(s, c, spec.Name)
		placed[spec.Name] = chosen
		if chosen == "" {
			reasons[spec.Name] = failure
		}

		row := func(label, node string) {
			line := label + "\t" + node + "\t"
			for _, e := range exts {
				line += j.cell(e, node) + "\t"
			}
			fmt.Fprintln(w, line+strconv.FormatInt(j.total(exts, node), 10))
		}
		if chosen == "" {
			fmt.Fprintf(w, "%s\tpending\t", spec.Name)
			for range exts {
				fmt.Fprint(w, "\t")
			}
			fmt.Fprintln(w, "")
			notes = append(notes, fmt.Sprintf("%s is pending: %s", spec.Name, failure))
			continue
		}
		row(spec.Name, chosen)
		if up := runnerUp(exts, j, nodes.Items, chosen); up != "" {
			row("  runner-up", up)
		}
	}
	w.Flush()

	// Why some nodes never win: the filters' reasons, for the first pod and for the first pod
	// following a telemetry policy (the telemetry filter's own reasons).
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	seen := map[string]bool{}
	for _, spec := range []harness.PodSpec{workload[0], workload[len(workload)-1]} {
		if err != nil {
			break
		}
		pod, _ := spec.Pod()
		if j, err := judge(ctx, exts, pod, nodes.Items); err == nil {
			for _, e := range exts {
				rej := j.reject[e.title]
				keys := make([]string, 0, len(rej))
				for n := range rej {
					keys = append(keys, n)
				}
				sort.Strings(keys)
				for _, n := range keys {
					if note := fmt.Sprintf("%s rejects %s: %s", e.filter, n, rej[n]); !seen[note] {
						seen[note] = true
						notes = append(notes, note)
					}
				}
			}
		}
	}
	fmt.Println()
	fmt.Println("Scores are each agent's answer (0..10) asked just before the pod was created; kube-scheduler adds")
	fmt.Println("10 × weight × score to its own plugins' scores (0..100 each) and binds the best node.")
	for _, n := range notes {
		fmt.Println("  " + n)
	}
	return placed, reasons
}

// runnerUp is the node, other than chosen, that passes every extender filter and has the best
// weighted extender total (ties by name).
func runnerUp(exts []extender, j judgement, nodes []corev1.Node, chosen string) string {
	best, bestTotal := "", int64(-1)
	for _, n := range nodes {
		if n.Name == chosen || !j.passes(n.Name) {
			continue
		}
		if t := j.total(exts, n.Name); t > bestTotal {
			best, bestTotal = n.Name, t
		}
	}
	return best
}

// waitForOutcome waits for the pod to be bound (it returns the node) or to fail scheduling (it
// returns "" and the event's message).
func waitForOutcome(s *harness.Session, c *harness.Cluster, name string) (string, string) {
	deadline := time.Now().Add(harness.BindingTimeout)
	for time.Now().Before(deadline) {
		pod, err := c.Client.CoreV1().Pods("default").Get(s.Context(), name, metav1.GetOptions{})
		if err == nil && pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, ""
		}
		for _, e := range c.Events(s, "default", name) {
			if e.Reason == "FailedScheduling" {
				return "", e.Message
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.Fatalf("pod %s: neither bound nor failed within %s", name, harness.BindingTimeout)
	return "", ""
}
