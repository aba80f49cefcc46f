package usage

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-safe-scheduler/extender/workload"
)

// record is one workload as stored: a ConfigMap data key "kind.namespace.name" holding it as
// one line of JSON. Estimate is for the reader (kubectl); the rest restores the state.
type record struct {
	Estimate recordEstimate `json:"estimate"`
	N        int            `json:"n"`
	// First and Last are the first and the latest sample, in Unix seconds.
	First int64 `json:"first"`
	Last  int64 `json:"last"`
	// Peak and PrevPeak are bytes; PeakStart is Unix seconds.
	Peak      float64 `json:"peak,omitempty"`
	PrevPeak  float64 `json:"prevPeak,omitempty"`
	PeakStart int64   `json:"peakStart,omitempty"`
	// PeakWindow is the writer's USAGE_PEAK_WINDOW in seconds, for the readers' memory floor.
	PeakWindow int64       `json:"peakWindow,omitempty"`
	CPU        *histRecord `json:"cpu,omitempty"`
	Memory     *histRecord `json:"memory,omitempty"`
}

// recordEstimate is the workload's estimate when written: the percentile of usage/request per
// resource, and whether it is trusted yet.
type recordEstimate struct {
	Percentile float64 `json:"percentile"`
	CPU        float64 `json:"cpuRatio,omitempty"`
	Memory     float64 `json:"memoryRatio,omitempty"`
	Trusted    bool    `json:"trusted"`
}

// histRecord is a histogram: weights from bucket Lo on, relative to Ref (Unix milliseconds),
// scaled so that the largest is 1000 and rounded to 3 significant digits on the safe side
// (encodeHist).
type histRecord struct {
	Ref int64     `json:"ref"`
	Lo  int       `json:"lo"`
	W   []float64 `json:"w"`
}

// encodeHist scales hg so that its largest weight is 1000 and rounds every weight down to 3
// significant digits (below 0.01: 0), carrying what the rounding took into the next bucket up;
// the last bucket holding weight takes the remainder, rounded up. So the stored weight below
// any bucket's end is never more than the true one, and the total never less: no percentile
// of the stored histogram is lower than the histogram's (rounding each weight to nearest
// could move a percentile down by buckets where the cumulative weight is flat or tied).
func encodeHist(hg *histogram, h time.Duration) *histRecord {
	if hg.empty() {
		return nil
	}
	top := slices.Max(hg.w)
	// Move the reference so that the largest weight is 1000: w' = w * 2^((ref - ref') / h).
	shift := time.Duration(math.Log2(top/1000) * float64(h))
	ref := hg.ref.Add(shift).Truncate(time.Millisecond)
	f := math.Exp2(float64(hg.ref.Sub(ref)) / float64(h))
	last := len(hg.w) - 1
	for last > 0 && hg.w[last] == 0 {
		last--
	}
	w := make([]float64, last+1)
	carry := 0.0
	for i, x := range hg.w[:last+1] {
		x = x*f + carry
		if i == last {
			w[i] = ceil3(x)
			break
		}
		w[i] = floor3(x)
		carry = x - w[i]
	}
	// Trim the low edge rounded to nothing (the high edge ends with weight).
	a := 0
	for a < len(w) && w[a] == 0 {
		a++
	}
	return &histRecord{Ref: ref.UnixMilli(), Lo: hg.lo + a, W: w[a:]}
}

// sig3 is the power of ten that makes x's 3 significant digits an integer.
func sig3(x float64) float64 { return math.Pow(10, 2-math.Floor(math.Log10(x))) }

// floor3 rounds x down to 3 significant digits; below 0.01 (of 1000 at the top) is 0.
func floor3(x float64) float64 {
	if x < 0.01 {
		return 0
	}
	p := sig3(x)
	return min(x, math.Floor(x*p)/p)
}

// ceil3 rounds x up to 3 significant digits, however small.
func ceil3(x float64) float64 {
	if x <= 0 {
		return 0
	}
	p := sig3(x)
	return max(x, math.Ceil(x*p)/p)
}

func (r *histRecord) decode(what string) (histogram, error) {
	if r == nil {
		return histogram{}, nil
	}
	if r.Lo < 0 || r.Lo+len(r.W) > numBuckets {
		return histogram{}, fmt.Errorf("%s histogram spans buckets %d..%d, outside 0..%d", what, r.Lo, r.Lo+len(r.W)-1, numBuckets-1)
	}
	hg := histogram{ref: time.UnixMilli(r.Ref).UTC(), lo: r.Lo, w: slices.Clone(r.W)}
	for _, x := range r.W {
		if !(x >= 0) || math.IsInf(x, 0) {
			return histogram{}, fmt.Errorf("%s histogram has weight %v", what, x)
		}
		hg.total += x
	}
	if hg.total == 0 {
		return histogram{}, nil
	}
	return hg, nil
}

// dataKey is the ConfigMap data key of a workload key: its slashes become dots ("deployment/
// shop/web" -> "deployment.shop.web"); neither a kind nor a namespace holds a dot.
func dataKey(key string) (string, bool) {
	k := strings.Replace(key, "/", ".", 2)
	return k, len(validation.IsConfigMapKey(k)) == 0
}

// parseDataKey is dataKey's inverse.
func parseDataKey(k string) (string, bool) {
	kind, rest, ok := strings.Cut(k, ".")
	if !ok {
		return "", false
	}
	ns, name, ok := strings.Cut(rest, ".")
	if !ok {
		return "", false
	}
	key := workload.Key{Kind: kind, Namespace: ns, Name: name}.String()
	_, valid := workload.Parse(key)
	return key, valid
}

// shardOf spreads the workloads over n ConfigMaps by a hash of the key.
func shardOf(key string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

func (l *Learner) recordLocked(st *state) record {
	e := recordEstimate{Percentile: l.cfg.Percentile, Trusted: st.n >= l.cfg.MinObservations && st.last.Sub(st.first) >= l.cfg.MinSpan}
	if !st.cpu.empty() {
		e.CPU = st.cpu.percentile(l.cfg.Percentile)
	}
	if !st.mem.empty() {
		e.Memory = st.mem.percentile(l.cfg.Percentile)
	}
	window := l.cfg.PeakWindow
	if st.peakWindow > 0 {
		window = st.peakWindow
	}
	r := record{Estimate: e, N: st.n, First: st.first.Unix(), Last: st.last.Unix(), Peak: st.peak, PrevPeak: st.prevPeak,
		PeakWindow: int64(window / time.Second),
		CPU:        encodeHist(&st.cpu, l.cfg.HalfLife), Memory: encodeHist(&st.mem, l.cfg.HalfLife)}
	if !st.peakStart.IsZero() {
		r.PeakStart = st.peakStart.Unix()
	}
	return r
}

func (r record) state(key string) (*state, error) {
	cpu, err := r.CPU.decode("cpu")
	if err != nil {
		return nil, err
	}
	mem, err := r.Memory.decode("memory")
	if err != nil {
		return nil, err
	}
	if r.N < 0 || r.Last < r.First || r.Peak < 0 || r.PrevPeak < 0 || r.PeakWindow < 0 {
		return nil, fmt.Errorf("inconsistent counts or times (n %d, first %d, last %d)", r.N, r.First, r.Last)
	}
	wk, _ := workload.Parse(key)
	st := &state{key: key, wk: wk, cpu: cpu, mem: mem, n: r.N, first: time.Unix(r.First, 0).UTC(), last: time.Unix(r.Last, 0).UTC(),
		peak: r.Peak, prevPeak: r.PrevPeak, peakWindow: time.Duration(r.PeakWindow) * time.Second, trusted: r.Estimate.Trusted}
	if r.PeakStart != 0 {
		st.peakStart = time.Unix(r.PeakStart, 0).UTC()
	}
	return st, nil
}

// Shards encodes the learner into n ConfigMap data maps, each at most maxBytes of keys and
// values: a shard that would exceed it leaves out its least recently observed workloads
// (counted in dropped). It also returns the change count it reflects.
func (l *Learner) Shards(n, maxBytes int) (shards []map[string]string, dropped int, changes uint64) {
	type entry struct {
		k, v string
		last time.Time
	}
	per := make([][]entry, n)
	l.mu.RLock()
	changes = l.changes
	for e := l.lru.Front(); e != nil; e = e.Next() { // most recently observed first
		st := e.Value.(*state)
		k, ok := dataKey(st.key)
		if !ok {
			dropped++
			continue
		}
		b, err := json.Marshal(l.recordLocked(st))
		if err != nil { // only NaN or Inf, which Observe keeps out
			dropped++
			continue
		}
		i := shardOf(st.key, n)
		per[i] = append(per[i], entry{k, string(b), st.last})
	}
	l.mu.RUnlock()
	shards = make([]map[string]string, n)
	for i, entries := range per {
		shards[i] = make(map[string]string, len(entries))
		size := 0
		for j, e := range entries {
			if size+len(e.k)+len(e.v) > maxBytes {
				dropped += len(entries) - j
				break
			}
			size += len(e.k) + len(e.v)
			shards[i][e.k] = e.v
		}
	}
	return shards, dropped, changes
}

// writerPercentiles returns the percentiles (0 < p <= 1) the writer's estimates of data were
// made at (its USAGE_PERCENTILE), each once.
func writerPercentiles(data map[string]string) []float64 {
	var out []float64
	for _, v := range data {
		var r struct {
			Estimate recordEstimate `json:"estimate"`
		}
		if json.Unmarshal([]byte(v), &r) == nil && r.Estimate.Percentile > 0 && !slices.Contains(out, r.Estimate.Percentile) {
			out = append(out, r.Estimate.Percentile)
		}
	}
	return out
}

// Merge reads one shard's data into the learner: a workload this learner has observed more
// recently keeps its own state unless replace is set (a reader takes what the writer wrote).
// It returns the workloads read, and joins the problems of the keys it could not read.
func (l *Learner) Merge(data map[string]string, replace bool) (int, error) {
	var problems []string
	type read struct {
		key string
		st  *state
	}
	var states []read
	for k, v := range data {
		key, ok := parseDataKey(k)
		if !ok {
			problems = append(problems, fmt.Sprintf("%q is not a workload key", k))
			continue
		}
		var r record
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", k, err))
			continue
		}
		st, err := r.state(key)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", k, err))
			continue
		}
		states = append(states, read{key, st})
	}
	// Oldest first, so that each lands at the front of the recency list (insertLocked).
	slices.SortFunc(states, func(a, b read) int { return a.st.last.Compare(b.st.last) })
	n := 0
	l.mu.Lock()
	for _, r := range states {
		if old, ok := l.m[r.st.wk]; ok {
			if !replace && !old.last.Before(r.st.last) {
				continue
			}
			l.lru.Remove(old.elem)
			delete(l.m, r.st.wk)
		}
		if l.insertLocked(r.st) {
			n++
		}
	}
	l.mu.Unlock()
	if len(problems) > 0 {
		slices.Sort(problems)
		return n, fmt.Errorf("unreadable workloads: %s", strings.Join(problems, "; "))
	}
	return n, nil
}

// insertLocked adds a read state at its place by last observation, evicting beyond the bound;
// false when it is older than everything kept in a full learner.
func (l *Learner) insertLocked(st *state) bool {
	for len(l.m) >= l.cfg.MaxWorkloads {
		old := l.lru.Back()
		if old.Value.(*state).last.After(st.last) {
			return false
		}
		l.lru.Remove(old)
		delete(l.m, old.Value.(*state).wk)
	}
	e := l.lru.Front()
	for e != nil && e.Value.(*state).last.After(st.last) {
		e = e.Next()
	}
	if e == nil {
		st.elem = l.lru.PushBack(st)
	} else {
		st.elem = l.lru.InsertBefore(st, e)
	}
	l.m[st.wk] = st
	l.changes++
	return true
}
