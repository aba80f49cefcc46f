package telemetry

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// labeler delays node label changes: a change is written once it has been wanted, unchanged,
// for hold (the first refresh that wants it starts the clock), so that a metric hovering
// around a target does not make labels flap.
type labeler struct {
	hold    time.Duration
	pending map[string]map[string]pendingLabel // node -> key -> the change waiting
}

// pendingLabel is a wanted change of one label: set to value, or removed.
type pendingLabel struct {
	value  string
	remove bool
	since  time.Time
}

func newLabeler(hold time.Duration) *labeler {
	return &labeler{hold: hold, pending: map[string]map[string]pendingLabel{}}
}

// wantedLabels returns the labels the policies want on node: <policy>=violating where its
// deschedule strategy is violated, and the labels of its labeling strategy (labelingLabels). A
// rule whose metric is missing or stale never holds here, whatever TELEMETRY_STALE says.
func wantedLabels(policies []*Policy, v Values, node string, now time.Time, maxAge time.Duration) map[string]string {
	want := map[string]string{}
	for _, p := range policies {
		if s := p.Strategies[Deschedule]; s != nil && Judge(s, v, node, now, maxAge).Violated {
			want[p.Name] = ViolatingValue
		}
		if s := p.Strategies[Labeling]; s != nil {
			maps.Copy(want, labelingLabels(p, s, v, node, now, maxAge))
		}
	}
	return want
}

// labelingLabels returns the labels policy p's labeling strategy s writes on node, as TAS
// does: nothing unless the strategy holds (every rule for allOf, any for anyOf); then the
// labels of the rules that hold. Where several of those rules set one key, the documented TAS
// rule picks the value: among GreaterThan rules the one whose metric value is largest, among
// LessThan rules the smallest. Deterministically here: rules are taken in order, and a later
// rule replaces the key's earlier one only when it has the same operator and a strictly larger
// (GreaterThan) or smaller (LessThan) value; so ties, Equals rules and rules of different
// operators keep the first (TAS picks at random among ties, and writes no label of the policy
// on the node when operators differ). Within one rule, a key listed twice takes its last value.
func labelingLabels(p *Policy, s *Strategy, v Values, node string, now time.Time, maxAge time.Duration) map[string]string {
	type winner struct {
		rule  int
		value float64
		label string
	}
	won := map[string]winner{}
	held := 0
	for i, r := range s.Rules {
		sample, _, fresh := v.Lookup(r.Metricname, node, now, maxAge)
		if !fresh || !Holds(r, sample.Value) {
			continue
		}
		held++
		for _, l := range r.Labels {
			k, val, err := p.labelingLabel(l)
			if err != nil {
				continue // left out by ParsePolicy already
			}
			w, ok := won[k]
			better := ok && s.Rules[w.rule].Operator == r.Operator &&
				((r.Operator == GreaterThan && sample.Value > w.value) || (r.Operator == LessThan && sample.Value < w.value))
			if !ok || w.rule == i || better {
				won[k] = winner{rule: i, value: sample.Value, label: val}
			}
		}
	}
	if held == 0 || (s.AllOf() && held < len(s.Rules)) {
		return nil
	}
	out := make(map[string]string, len(won))
	for k, w := range won {
		out[k] = w.label
	}
	return out
}

// changes returns the label changes due on a node with labels current, given want and the
// keys this agent manages (deschedule keys whose value is "violating", and every key under
// LabelingPrefix): keys to set (value) or remove (nil). It keeps the pending changes' clocks.
func (l *labeler) changes(node string, current, want map[string]string, deschedule map[string]bool, now time.Time) map[string]*string {
	diff := map[string]pendingLabel{}
	for k, v := range current {
		managed := (deschedule[k] && v == ViolatingValue) || strings.HasPrefix(k, LabelingPrefix)
		if w, ok := want[k]; managed && !ok {
			diff[k] = pendingLabel{remove: true}
		} else if ok && w != v {
			diff[k] = pendingLabel{value: w}
		}
	}
	for k, w := range want {
		if _, ok := current[k]; !ok {
			diff[k] = pendingLabel{value: w}
		}
	}
	pend := l.pending[node]
	next := map[string]pendingLabel{}
	due := map[string]*string{}
	for k, d := range diff {
		if p, ok := pend[k]; ok && p.value == d.value && p.remove == d.remove {
			d.since = p.since
		} else {
			d.since = now
		}
		if now.Sub(d.since) >= l.hold {
			if d.remove {
				due[k] = nil
			} else {
				due[k] = &d.value
			}
			continue
		}
		next[k] = d
	}
	if len(next) == 0 {
		delete(l.pending, node)
	} else {
		l.pending[node] = next
	}
	return due
}

// reconcileLabels brings every node's deschedule and labeling labels to what the policies want
// (after the hold), with one merge patch per node that needs one: setting a label to the value
// it has, or removing one that is gone, changes nothing, so several replicas may do it.
func (a *Agent) reconcileLabels(ctx context.Context, now time.Time, v Values) {
	if a.h.Client == nil {
		return
	}
	policies := a.policies.list()
	deschedule := a.policies.descheduleKeys()
	seen := map[string]bool{}
	for _, n := range a.nodes() {
		seen[n.Name] = true
		due := a.labels.changes(n.Name, n.Labels, wantedLabels(policies, v, n.Name, now, a.cfg.MaxAge.D()), deschedule, now)
		if len(due) == 0 {
			continue
		}
		if err := a.patchLabels(ctx, n, due); err != nil {
			a.log.WithError(err).Warnf("labelling node %s", n.Name)
			continue
		}
		a.metrics.labelWrites.Inc()
	}
	for node := range a.labels.pending {
		if !seen[node] {
			delete(a.labels.pending, node)
		}
	}
}

func (a *Agent) patchLabels(ctx context.Context, n *corev1.Node, due map[string]*string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": due}})
	if err != nil {
		return err
	}
	keys := slices.Sorted(maps.Keys(due))
	var desc []string
	for _, k := range keys {
		if due[k] == nil {
			desc = append(desc, "-"+k)
		} else {
			desc = append(desc, k+"="+*due[k])
		}
	}
	a.log.Infof("node %s labels: %s", n.Name, strings.Join(desc, ", "))
	_, err = a.h.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "telemetry-extender"})
	return err
}
