package telemetry

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kube-safe-scheduler/extender/framework"
)

// Sample is one metric's value on one node and the time it was read (or, when the source
// says, measured).
type Sample struct {
	Value float64
	Time  time.Time
}

// Values holds the last sample of each metric on each node: metric -> node -> sample. A
// snapshot is never modified once published.
type Values map[string]map[string]Sample

// Lookup returns the sample of metric on node, whether there is one, and whether it is fresh
// (no older than maxAge at now).
func (v Values) Lookup(metric, node string, now time.Time, maxAge time.Duration) (s Sample, found, fresh bool) {
	s, found = v[metric][node]
	return s, found, found && now.Sub(s.Time) <= maxAge
}

// Holds reports whether rule r holds for value v: v > target (GreaterThan), v < target
// (LessThan) or v == target (Equals).
func Holds(r Rule, v float64) bool {
	t := float64(r.Target)
	switch r.Operator {
	case GreaterThan:
		return v > t
	case LessThan:
		return v < t
	case Equals:
		return v == t
	}
	return false
}

func symbol(op string) string {
	switch op {
	case GreaterThan:
		return ">"
	case LessThan:
		return "<"
	}
	return "=="
}

func formatValue(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func age(now, t time.Time) string { return max(now.Sub(t), 0).Round(time.Second).String() }

// staleAge is a stale value's age rounded up to the second, so that it reads older than the
// maximum it exceeds.
func staleAge(now, t time.Time) string {
	return (max(now.Sub(t), 0) + time.Second - 1).Truncate(time.Second).String()
}

// Judgement is a strategy's rules evaluated on one node.
type Judgement struct {
	// Violated: the strategy's condition holds (any rule for anyOf, every rule for allOf),
	// counting a rule whose metric is missing or stale as not holding.
	Violated bool
	// Held describes the rules that hold ("node_cpu 93 > 90 (12s old)").
	Held []string
	// Unknown describes the rules whose metric is missing or stale.
	Unknown []string
	// Undecided: not violated, but it would be if the unknown rules held.
	Undecided bool
}

// Judge evaluates strategy s on node with the values at now; a sample older than maxAge is
// stale.
func Judge(s *Strategy, v Values, node string, now time.Time, maxAge time.Duration) Judgement {
	var j Judgement
	known := 0
	for _, r := range s.Rules {
		sample, found, fresh := v.Lookup(r.Metricname, node, now, maxAge)
		switch {
		case !found:
			j.Unknown = append(j.Unknown, r.Metricname+" missing")
		case !fresh:
			j.Unknown = append(j.Unknown, fmt.Sprintf("%s %s stale (%s old, max %s)", r.Metricname, formatValue(sample.Value), staleAge(now, sample.Time), maxAge))
		default:
			known++
			if Holds(r, sample.Value) {
				j.Held = append(j.Held, fmt.Sprintf("%s %s %s %d (%s old)", r.Metricname, formatValue(sample.Value), symbol(r.Operator), r.Target, age(now, sample.Time)))
			}
		}
	}
	if s.AllOf() {
		j.Violated = len(j.Held) == len(s.Rules)
		// Undecided when no known rule fails: every known rule holds and some are unknown.
		j.Undecided = !j.Violated && len(j.Unknown) > 0 && len(j.Held) == known
	} else {
		j.Violated = len(j.Held) > 0
		j.Undecided = !j.Violated && len(j.Unknown) > 0
	}
	return j
}

// Reason is the rejection message of a violated judgement.
func (j Judgement) Reason(policy string, allOf bool) string {
	sep := " or "
	if allOf {
		sep = " and "
	}
	return "telemetry policy " + policy + ": " + strings.Join(j.Held, sep)
}

// Scores gives each node a score from its value of the scheduleonmetric rule r's metric:
// every node with a (fresh) value scores 1..MaxScore, linear over those values (the best
// MaxScore, the worst 1), and every node without one (ok[i] false) scores 0, so that, as in
// TAS, a node with a value ranks above every node without. GreaterThan: higher is better;
// LessThan: lower is better; Equals: closer to the target is better. When every value is
// equally good, each scores MaxScore.
//
//	score = 1 + (MaxScore-1) * (goodness - worst) / (best - worst), rounded to the nearest integer
func Scores(r Rule, vals []float64, ok []bool) []int64 {
	out := make([]int64, len(vals))
	good := func(v float64) float64 {
		switch r.Operator {
		case LessThan:
			return -v
		case Equals:
			return -math.Abs(v - float64(r.Target))
		}
		return v
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	ok = slices.Clone(ok)
	for i, v := range vals {
		ok[i] = ok[i] && !math.IsNaN(v) // NaN is no value
		if ok[i] {
			g := good(v)
			lo, hi = min(lo, g), max(hi, g)
		}
	}
	for i, v := range vals {
		if !ok[i] {
			continue
		}
		if hi == lo {
			out[i] = framework.MaxScore
			continue
		}
		s := 1 + math.Round(float64(framework.MaxScore-1)*(good(v)-lo)/(hi-lo))
		if math.IsNaN(s) { // an infinite value: Inf/Inf
			s = 1
			if good(v) == hi {
				s = float64(framework.MaxScore)
			}
		}
		out[i] = min(max(int64(s), 1), framework.MaxScore)
	}
	return out
}
