package reward

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// table is the learnt rewards, shared by the learner (writes) and the scorer (reads).
type table struct {
	m   model
	max int

	mu   sync.RWMutex
	rows map[key]entry
	// observedUntil is the time up to which the last flush (written, or loaded) included every
	// observation: a transition older than it was counted before a restart.
	observedUntil time.Time
	// changed counts observations since the start, so that a flush writes only when it must.
	changed uint64
}

func newTable(m model, max int) *table {
	return &table{m: m, max: max, rows: map[key]entry{}}
}

// observe learns x for type typ on node at now, in the type's row and in the node's row over
// every type.
func (t *table) observe(typ, node string, x float64, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range []key{{Type: typ, Node: node}, {Node: node}} {
		e, found := t.rows[k]
		t.rows[k] = t.m.observe(e, found, x, now)
		if !found && t.max > 0 && len(t.rows) > t.max {
			t.evictOldestLocked(k)
		}
	}
	t.changed++
}

// evictOldestLocked drops the least recently observed row other than keep.
func (t *table) evictOldestLocked(keep key) {
	var oldest key
	var found bool
	for k, e := range t.rows {
		if k == keep {
			continue
		}
		if !found || older(k, e, oldest, t.rows[oldest]) {
			oldest, found = k, true
		}
	}
	if found {
		delete(t.rows, oldest)
	}
}

// older orders rows for eviction: least recently observed first, ties by key (so that every
// replica drops the same rows).
func older(a key, ea entry, b key, eb entry) bool {
	if c := ea.T.Compare(eb.T); c != 0 {
		return c < 0
	}
	if a.Type != b.Type {
		return a.Type < b.Type
	}
	return a.Node < b.Node
}

// reward returns the reward of type typ on node at now (see model.blend and model.decayed).
func (t *table) reward(typ, node string, now time.Time) float64 {
	t.mu.RLock()
	e, found := t.rows[key{Type: typ, Node: node}]
	n, nodeFound := t.rows[key{Node: node}]
	t.mu.RUnlock()
	rt := t.m.initial
	if found {
		rt = t.m.decayed(e, now)
	}
	if t.m.minObservations <= 0 || e.N >= t.m.minObservations {
		return rt
	}
	rn := t.m.initial
	if nodeFound {
		rn = t.m.decayed(n, now)
	}
	return t.m.blend(e.N, rt, rn)
}

// get returns a row as stored (for tests and logs).
func (t *table) get(typ, node string) (entry, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.rows[key{Type: typ, Node: node}]
	return e, ok
}

func (t *table) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.rows)
}

func (t *table) since() time.Time {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.observedUntil
}

// The stored form: a JSON document in the ConfigMap, rows sorted by type then node.
type storedTable struct {
	Version       int         `json:"version"`
	ObservedUntil time.Time   `json:"observedUntil"`
	Rows          []storedRow `json:"rows"`
}

type storedRow struct {
	Type string    `json:"type,omitempty"`
	Node string    `json:"node"`
	R    float64   `json:"r"`
	N    int       `json:"n"`
	T    time.Time `json:"t"`
}

// snapshot encodes every row with observedUntil = now and returns the number of observations it
// includes (to compare with changed later).
func (t *table) snapshot(now time.Time) ([]byte, uint64, error) {
	t.mu.RLock()
	st := storedTable{Version: 1, ObservedUntil: now, Rows: make([]storedRow, 0, len(t.rows))}
	for k, e := range t.rows {
		st.Rows = append(st.Rows, storedRow{Type: k.Type, Node: k.Node, R: e.R, N: e.N, T: e.T})
	}
	changed := t.changed
	t.mu.RUnlock()
	sortRows(st.Rows)
	b, err := json.Marshal(st)
	return b, changed, err
}

// merge takes the stored table's rows that are newer than the ones held (or not held), then
// evicts past max. It returns the number of rows taken.
func (t *table) merge(data []byte) (int, error) {
	var st storedTable
	if err := json.Unmarshal(data, &st); err != nil {
		return 0, fmt.Errorf("decoding the stored table: %w", err)
	}
	if st.Version != 1 {
		return 0, fmt.Errorf("the stored table has version %d; this extender reads version 1", st.Version)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	taken := 0
	for _, r := range st.Rows {
		k := key{Type: r.Type, Node: r.Node}
		if e, ok := t.rows[k]; ok && !r.T.After(e.T) {
			continue
		}
		t.rows[k] = entry{R: r.R, N: r.N, T: r.T}
		taken++
	}
	for _, k := range evict(t.rows, t.max) {
		delete(t.rows, k)
	}
	if st.ObservedUntil.After(t.observedUntil) {
		t.observedUntil = st.ObservedUntil
	}
	return taken, nil
}

func sortRows(rows []storedRow) {
	less := func(a, b storedRow) int {
		switch {
		case a.Type < b.Type:
			return -1
		case a.Type > b.Type:
			return 1
		case a.Node < b.Node:
			return -1
		case a.Node > b.Node:
			return 1
		}
		return 0
	}
	slices.SortFunc(rows, less)
}
