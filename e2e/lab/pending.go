package main

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// pendingReasons says why the pods still pending were not placed, from their PodScheduled
// condition (kube-scheduler's "0/200 nodes are available: 150 Insufficient memory, 50 <a
// plugin's reason>..." message): how many pods wait, and, per reason with its numbers blanked
// (so that safe's per-node risks make one reason), the nodes it rejected per pending pod, the
// most first. A pod that no cycle judged yet (no condition) counts as "not judged yet"; a pod
// whose condition is no FitError (an error, a Permit's rejection) is counted by its message.
func pendingReasons(pods []corev1.Pod, now time.Time) string {
	nodes := map[string]int{}
	other := map[string]int{} // pods whose condition's message is not a FitError, by message
	pending, unjudged := 0, 0
	var ages []time.Duration // of the pods not judged yet
	for _, p := range pods {
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodPending {
			continue
		}
		pending++
		msg, judged := "", false
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				msg, judged = c.Message, true
			}
		}
		counts := rejections(msg)
		switch {
		case !judged:
			unjudged++
			ages = append(ages, now.Sub(p.CreationTimestamp.Time))
		case len(counts) == 0: // not a FitError: an error, or a rejection after Filter
			other[blank(cut(msg, 100))]++
		}
		for r, n := range counts {
			nodes[r] += n
		}
	}
	if pending == 0 {
		return "no pod pending"
	}
	reasons := slices.SortedFunc(maps.Keys(nodes), func(a, b string) int { return cmp.Or(cmp.Compare(nodes[b], nodes[a]), cmp.Compare(a, b)) })
	var parts []string
	for _, r := range reasons[:min(len(reasons), 6)] {
		parts = append(parts, fmt.Sprintf("%.1f %s", float64(nodes[r])/float64(pending), r))
	}
	judgedText := ""
	if len(ages) > 0 {
		slices.Sort(ages)
		judgedText = fmt.Sprintf(", created %s to %s ago in real time, median %s", ages[0].Round(time.Second), ages[len(ages)-1].Round(time.Second), ages[len(ages)/2].Round(time.Second))
	}
	out := fmt.Sprintf("%d pods pending (%d not judged yet%s); nodes rejected per pending pod, by reason: %s", pending, unjudged, judgedText, strings.Join(parts, ", "))
	if len(reasons) > 6 {
		out += fmt.Sprintf(" (and %d more reasons)", len(reasons)-6)
	}
	for _, m := range slices.SortedFunc(maps.Keys(other), func(a, b string) int { return cmp.Or(cmp.Compare(other[b], other[a]), cmp.Compare(a, b)) }) {
		out += fmt.Sprintf("; %d pods: %q", other[m], m)
	}
	return out
}

// cut returns s's first n bytes at most.
func cut(s string, n int) string { return s[:min(len(s), n)] }

var (
	numbers = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)
	counted = regexp.MustCompile(`^([0-9]+) (.*)$`)
)

// rejections parses kube-scheduler's FitError message into the nodes rejected per reason, the
// reasons' numbers blanked ("#") and anything in parentheses dropped; the preemption part is
// left out.
func rejections(msg string) map[string]int {
	msg, _, _ = strings.Cut(msg, ". preemption:")
	_, list, ok := strings.Cut(msg, " nodes are available: ")
	if !ok {
		return nil
	}
	list = strings.TrimSuffix(list, ".")
	// Reasons hold ", " themselves (safe's "(mu 0.81, sigma 0.12, ...)"): a part that does not
	// start with a count continues the previous one.
	var items []string
	for _, part := range strings.Split(list, ", ") {
		if counted.MatchString(part) || len(items) == 0 {
			items = append(items, part)
		} else {
			items[len(items)-1] += ", " + part
		}
	}
	out := map[string]int{}
	for _, it := range items {
		m := counted.FindStringSubmatch(it)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		out[blank(m[2])] += n
	}
	return out
}

var parens = regexp.MustCompile(`\s*\([^)]*\)`)

func blank(reason string) string {
	reason = parens.ReplaceAllString(reason, "")
	reason = numbers.ReplaceAllString(reason, "#")
	return strings.Join(strings.Fields(reason), " ")
}

// metricsAllowed lets the run's end read the scheduler's /metrics anonymously, on loopback.
const metricsAllowed = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"

// queueSummary says, from the scheduler's /metrics at port, its scheduling attempts by result,
// the pods waiting by queue, and the events that moved the most pods back to be retried: how
// busy retries kept it (a failure to read is said, not fatal).
func queueSummary(port int) string {
	ss, err := harness.SchedulerMetrics(port)
	if err != nil {
		return err.Error()
	}
	return summarizeQueue(ss)
}

// summarizeQueue is queueSummary's reading of the scheduler's samples.
func summarizeQueue(ss harness.Samples) string {
	attempts := ss.Sum("scheduler_schedule_attempts_total", func(s harness.Sample) string { return s.Label("result") })
	pending := ss.Sum("scheduler_pending_pods", func(s harness.Sample) string { return s.Label("queue") })
	moved := ss.Sum("scheduler_queue_incoming_pods_total", func(s harness.Sample) string {
		if q := s.Label("queue"); q == "active" || q == "backoff" {
			return s.Label("event")
		}
		return ""
	})
	top := slices.SortedFunc(maps.Keys(moved), func(a, b string) int { return cmp.Or(cmp.Compare(moved[b], moved[a]), cmp.Compare(a, b)) })
	var events []string
	for _, e := range top[:min(len(top), 4)] {
		events = append(events, fmt.Sprintf("%s %.0f", e, moved[e]))
	}
	return fmt.Sprintf("attempts scheduled %.0f, unschedulable %.0f, error %.0f; pending active %.0f, backoff %.0f, unschedulable %.0f, gated %.0f; pods queued by event: %s",
		attempts["scheduled"], attempts["unschedulable"], attempts["error"], pending["active"], pending["backoff"], pending["unschedulable"], pending["gated"], strings.Join(events, ", "))
}
