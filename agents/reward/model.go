package reward

import (
	"math"
	"slices"
	"time"
)

// key names a row of the table: a pod type on a node. The type "" is the node's row over every
// type (see blend).
type key struct {
	Type string
	Node string
}

// entry is one row: the reward R as of time T (the last observation), and N, the observations
// it has learnt from.
type entry struct {
	R float64
	N int
	T time.Time
}

// model holds the learning parameters (from Config) and does the arithmetic; it keeps no state.
type model struct {
	weight, initial float64
	halfLife        time.Duration
	minObservations int
}

// decayed returns e's reward at now: evidence ages with half-life h, so the reward drifts back
// toward the initial value r0:
//
//	r(now) = r0 + (R - r0) * 2^(-(now - T) / h)     (h = 0: R, no drift)
func (m model) decayed(e entry, now time.Time) float64 {
	if m.halfLife <= 0 || !now.After(e.T) {
		return e.R
	}
	f := math.Exp2(-float64(now.Sub(e.T)) / float64(m.halfLife))
	return m.initial + (e.R-m.initial)*f
}

// observe returns e after learning x (0..1) at now: the exponential moving average
//
//	R <- (1 - w) * r(now) + w * x
//
// from the decayed reward; a row never seen starts at r0.
func (m model) observe(e entry, found bool, x float64, now time.Time) entry {
	r := m.initial
	if found {
		r = m.decayed(e, now)
	}
	return entry{R: (1-m.weight)*r + m.weight*x, N: e.N + 1, T: now}
}

// blend returns the reward of a type on a node whose own row has n observations and reward rt,
// when the node's row over every type has reward rn: below minObservations (k) the type's row
// counts in proportion to its evidence and the node's row makes up the rest,
//
//	r = (n * rt + (k - n) * rn) / k     for n < k;   r = rt otherwise.
func (m model) blend(n int, rt, rn float64) float64 {
	k := m.minObservations
	if n >= k || k <= 0 {
		return rt
	}
	return (float64(n)*rt + float64(k-n)*rn) / float64(k)
}

// score converts a reward to a score: round(10 * r), within 0..10.
func score(r float64) int64 {
	return int64(math.Round(10 * min(max(r, 0), 1)))
}

// evict returns the keys to drop so that at most max rows remain: the least recently observed
// first (ties by key, so that every replica drops the same rows).
func evict(rows map[key]entry, max int) []key {
	if max <= 0 || len(rows) <= max {
		return nil
	}
	keys := make([]key, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		switch {
		case older(a, rows[a], b, rows[b]):
			return -1
		case older(b, rows[b], a, rows[a]):
			return 1
		}
		return 0
	})
	return keys[:len(rows)-max]
}
