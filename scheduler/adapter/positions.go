package adapter

import (
	"math/bits"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// positionTable finds a node object's position in a list of nodes (src): Filter, PreScore and
// Score look up every node they are asked about, thousands of times per pod. It is an
// open-addressing table of positions, twice the list's size or more, probed linearly from a
// multiplicative hash of the object's address; a slot holds a position into src (-1: empty),
// so the key compared is src's pointer at that position and the table holds 4 bytes a slot
// (64 KB at 5000 nodes, beside src's 40 KB: both stay in cache, where a map of 5000 pointers
// hashes each key and spreads over more lines). A node object listed twice is found at its
// last position, as a map assigned in list order finds it. The table is never modified once
// built (lists are shared between cycles); a patched list builds its own.
type positionTable struct {
	slots []int32
	shift uint // 64 - log2(len(slots))
	n     int  // distinct nodes
}

// newPositionTable returns the positions of src's nodes (nil entries skipped).
func newPositionTable(src []*corev1.Node) positionTable {
	size := 8
	for size < 2*len(src) {
		size *= 2
	}
	t := positionTable{slots: make([]int32, size), shift: uint(64 - bits.TrailingZeros(uint(size)))}
	for i := range t.slots {
		t.slots[i] = -1
	}
	for i, n := range src {
		if n == nil {
			continue
		}
		k := t.home(n)
		for {
			j := t.slots[k]
			if j < 0 {
				t.slots[k] = int32(i)
				t.n++
				break
			}
			if src[j] == n {
				t.slots[k] = int32(i) // listed again: the last position, as a map's assignment
				break
			}
			k = (k + 1) & (len(t.slots) - 1)
		}
	}
	return t
}

// home is the slot where n's probe starts: Fibonacci hashing of its address, whose low bits
// (an allocation's alignment) carry little.
func (t *positionTable) home(n *corev1.Node) int {
	return int((uint64(uintptr(unsafe.Pointer(n))) * 0x9E3779B97F4A7C15) >> t.shift)
}

// get returns n's position in src, the list the table was built from.
func (t *positionTable) get(src []*corev1.Node, n *corev1.Node) (int32, bool) {
	if len(t.slots) == 0 || n == nil {
		return 0, false
	}
	mask := len(t.slots) - 1
	for k := t.home(n); ; k = (k + 1) & mask {
		j := t.slots[k]
		if j < 0 {
			return 0, false
		}
		if src[j] == n {
			return j, true
		}
	}
}

// len returns how many distinct nodes the table holds.
func (t *positionTable) len() int { return t.n }
