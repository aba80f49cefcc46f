package beta

import (
	"math"
	"sync/atomic"
)

// Memo remembers the risks Risk computed, for one owner (the safe agent keeps one; nothing is
// shared between owners). A node's statistics change every few minutes (an annotator's cycle)
// while pods arrive many a second, and pods of one workload request the same: the same
// (mu, sigma, T) comes back for every pod until the node's statistics or the request change.
// Computing the Beta tail each time was most of the safe functions' cost on realistic nodes
// (memory's small relative spreads give large shapes, whose tails take hundreds of
// continued-fraction steps or the quadrature bridge). Memo.Risk keeps the tails it computed,
// keyed by the exact bits of its arguments: a hit returns the very float64 the computation
// returned, so every answer is identical to Risk's (TestRiskMemoIdentical).
//
// It is two-way set-associative (a new entry goes first in its set, the set's first moves
// second, its second is dropped) and lock-free: each slot holds a pointer to an immutable entry,
// so readers never see half an entry, and a reader racing a writer at worst misses and
// computes. Safe for concurrent use. A nil *Memo remembers nothing: its Risk is Risk.
type Memo struct {
	slots []atomic.Pointer[memoEntry]
}

// memoSetBits sets the number of slots, two per set: 2^16, room for 5000 nodes x 2 resources x
// a few requests (512 KiB of slots, up to 2 MiB of entries).
const (
	memoSetBits = 15
	memoSlots   = 2 << memoSetBits
)

// NewMemo returns an empty Memo (its 512 KiB of slots allocated at once, zero until used).
func NewMemo() *Memo {
	return &Memo{slots: make([]atomic.Pointer[memoEntry], memoSlots)}
}

// Risk is Risk(mu, sigma, t), computed once per exact (mu, sigma, t) while it stays in m.
func (m *Memo) Risk(mu, sigma, t float64) float64 {
	rank, alpha, beta, decided := decide(mu, sigma, t)
	if decided {
		return 1 - rank
	}
	if m == nil {
		return tailRisk(alpha, beta, t)
	}
	if r, ok := m.get(mu, sigma, t); ok {
		return r
	}
	r := tailRisk(alpha, beta, t)
	m.put(mu, sigma, t, r)
	return r
}

type memoEntry struct{ mu, sigma, t, risk float64 }

func (e *memoEntry) is(mu, sigma, t float64) bool {
	return e != nil && math.Float64bits(e.mu) == math.Float64bits(mu) && math.Float64bits(e.sigma) == math.Float64bits(sigma) &&
		math.Float64bits(e.t) == math.Float64bits(t)
}

// set returns the two slots of (mu, sigma, t)'s set: a mix of the arguments' bits.
func (m *Memo) set(mu, sigma, t float64) (*atomic.Pointer[memoEntry], *atomic.Pointer[memoEntry]) {
	h := math.Float64bits(mu)*0x9e3779b97f4a7c15 ^ math.Float64bits(sigma)*0xbf58476d1ce4e5b9 ^ math.Float64bits(t)*0x94d049bb133111eb
	h ^= h >> 29
	h *= 0x9e3779b97f4a7c15
	i := (h >> (64 - memoSetBits)) * 2
	return &m.slots[i], &m.slots[i+1]
}

// get returns the risk remembered for exactly (mu, sigma, t).
func (m *Memo) get(mu, sigma, t float64) (float64, bool) {
	a, b := m.set(mu, sigma, t)
	if e := a.Load(); e.is(mu, sigma, t) {
		return e.risk, true
	}
	if e := b.Load(); e.is(mu, sigma, t) {
		return e.risk, true
	}
	return 0, false
}

// put remembers risk for (mu, sigma, t), first in its set.
func (m *Memo) put(mu, sigma, t, risk float64) {
	a, b := m.set(mu, sigma, t)
	if old := a.Load(); old != nil {
		b.Store(old)
	}
	a.Store(&memoEntry{mu: mu, sigma: sigma, t: t, risk: risk})
}
