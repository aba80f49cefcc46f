package decisions

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/kube-safe-scheduler/extender/framework"
)

// measured is a node's measured resource as an agent explains it: a pointer to a small struct.
type measured struct{ Mu, Risk, Sigma float64 }

// safeLike returns n nodes' inputs shaped as safe's: a map per node with two pointers of its own,
// two boxed numbers and the pod's estimate shared by every node, and, for every third node, a
// string of its own.
func safeLike(n int) []framework.Inputs {
	est := framework.Inputs{"cpu": 1.5, "memory": 2e9, "learned": true}
	threshold, acceptable := any(0.8), any(0.05)
	out := make([]framework.Inputs, n)
	for i := range out {
		in := framework.Inputs{"cpu": &measured{Mu: float64(i)}, "memory": &measured{Sigma: 1},
			"threshold": threshold, "acceptableRisk": acceptable, "podEstimate": est}
		if i%3 == 0 {
			in["stale"] = fmt.Sprintf("statistics of node-%05d are 5m old", i)
		}
		out[i] = in
	}
	return out
}

// nestedLike returns n nodes' inputs of maps in maps with a number boxed per node, as the
// agents that explain per resource write them.
func nestedLike(n int) []framework.Inputs {
	out := make([]framework.Inputs, n)
	for i := range out {
		out[i] = framework.Inputs{
			"cpu":    framework.Inputs{"free": float64(i), "requested": int64(i) * 1000, "why": "fits"},
			"memory": framework.Inputs{"free": float64(i) * 2, "requested": int64(i) << 20},
			"score":  int64(i%10) + 1000,
		}
	}
	return out
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// The estimate of what a decision's inputs hold is within a third of what building them
// allocated, for two shapes of inputs (5000 nodes each).
func TestEstimateBytesNearHeap(t *testing.T) {
	for name, build := range map[string]func(int) []framework.Inputs{"safe-like": safeLike, "nested": nestedLike} {
		before := heapInUse()
		in := build(5000)
		heap := float64(heapInUse()) - float64(before)
		est := float64(estimateBytes(in))
		runtime.KeepAlive(in)
		t.Logf("%s: estimate %.0f bytes, heap %.0f (%.2fx)", name, est, heap, est/heap)
		if est < heap/1.33 || est > heap*1.33 {
			t.Errorf("%s: estimate %.0f bytes, heap grew %.0f: not within a third", name, est, heap)
		}
	}
}

// Inputs shared by every node count once; a node's own count for each node.
func TestEstimateBytesCountsSharedOnce(t *testing.T) {
	shared := framework.Inputs{"big": string(make([]byte, 100000))}
	one, many := []framework.Inputs{{"shared": shared}}, make([]framework.Inputs, 1000)
	for i := range many {
		many[i] = framework.Inputs{"shared": shared}
	}
	// The 999 more nodes add their maps and slice entries only, far less than 999 copies.
	if a, b := estimateBytes(one), estimateBytes(many); b-a > 999*400 || b <= a {
		t.Errorf("1 node %d bytes, 1000 nodes sharing the same value %d", a, b)
	}
	if got := estimateBytes(nil); got != 0 {
		t.Errorf("no inputs: %d bytes", got)
	}
}

// The log keeps inputs within its bound in bytes: the newest decisions keep theirs, the oldest
// lose them first, and the count follows decisions that leave the ring.
func TestInputsBoundedInBytes(t *testing.T) {
	per := estimateBytes(safeLike(1000))
	l := newLog(4, InputsKept, per*5/2) // room for two decisions' inputs, not three
	for i := range 3 {
		l.Add(Decision{Pod: fmt.Sprint(i), Inputs: safeLike(1000)})
	}
	kept := l.Last("", 4)
	for i, d := range kept { // newest first
		if has := d.Inputs != nil; has != (i < 2) {
			t.Errorf("decision %s (%d newest): inputs kept %v", d.Pod, i+1, has)
		}
	}
	if l.inputBytes != 2*per || l.inputNodes != 2000 {
		t.Errorf("inputBytes %d, inputNodes %d; want %d, 2000", l.inputBytes, l.inputNodes, 2*per)
	}
	// Decisions without inputs push the others out of the ring: nothing is counted any more.
	for range 4 {
		l.Add(Decision{Pod: "none"})
	}
	if l.inputBytes != 0 || l.inputNodes != 0 {
		t.Errorf("inputBytes %d, inputNodes %d after the ring turned over, want 0", l.inputBytes, l.inputNodes)
	}
	// A bound of 0 keeps no inputs, and the decisions still.
	none := New(Config{Kept: 2, InputsBytes: 0})
	none.Add(Decision{Pod: "p", Inputs: safeLike(10)})
	if d := none.Last("", 1); len(d) != 1 || d[0].Inputs != nil {
		t.Errorf("with a bound of 0: %+v", d)
	}
}
