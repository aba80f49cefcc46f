package safe

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
)

// table collects one call's per-node computation for SAFEPRINTTABLE and logs it, at debug
// level, as one message when flushed. A nil *table does nothing: the hot path only pays for a
// nil check.
type table struct {
	a      *Agent
	fields logrus.Fields
	b      strings.Builder
	w      *tabwriter.Writer
}

// newTable returns a table for one call of function fn, or nil unless SAFEPRINTTABLE is set and
// the log is at debug level or finer.
func (a *Agent) newTable(fn string, pod *corev1.Pod, d demand) *table {
	if !a.cfg.PrintTable || a.log == nil || !a.log.Logger.IsLevelEnabled(logrus.DebugLevel) {
		return nil
	}
	t := &table{a: a, fields: logrus.Fields{
		"function":      fn,
		"pod":           pod.Namespace + "/" + pod.Name,
		"demand_cpu_m":  d.cpu,
		"demand_mem_b":  d.memory,
		"threshold":     a.t,
		"accepted_risk": a.e,
		"forecast_w":    a.w,
	}}
	t.w = tabwriter.NewWriter(&t.b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(t.w, "node\tresource\tallocatable\tfree\tforecast\tstd\tmu\tsigma\trisk\tacceptable\toverload\tbalance\tnode result\t")
	return t
}

// node adds a node's two rows; result is the node's verdict or score.
func (t *table) node(name string, cpu, memory *measure, result string) {
	for _, m := range []*measure{cpu, memory} {
		fmt.Fprintf(t.w, "%s\t%s\t", name, m.res.name)
		switch m.state {
		case noStats:
			fmt.Fprint(t.w, "-\t-\t-\t-\t-\t-\t-\tyes\t-\t-\t")
		case noAllocatable:
			fmt.Fprintf(t.w, "%s\t%s\t%t\t%s\t-\t-\t1\tno\t0\t0\t", g(m.capacity), g(m.free), m.forecast, g(m.std))
		default:
			r := t.a.risk(m)
			fmt.Fprintf(t.w, "%s\t%s\t%t\t%s\t%.4f\t%.4f\t%.4f\t%s\t%d\t%d\t",
				g(m.capacity), g(m.free), m.forecast, g(m.std), m.mu, m.sigma, r,
				yesNo(t.a.acceptable(m)), OverloadScore(r, t.a.e), BalanceScore(m.mu, m.sigma))
		}
		fmt.Fprintf(t.w, "%s\t\n", result)
	}
}

// flush logs the table.
func (t *table) flush() {
	if t == nil {
		return
	}
	_ = t.w.Flush()
	t.a.log.WithFields(t.fields).Debug("safe agent per-node computation\n" + t.b.String())
}

func g(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
