package decisions

import (
	"reflect"
	"unsafe"

	"github.com/kube-safe-scheduler/extender/framework"
)

// inputsSample is how many nodes' inputs estimateBytes walks.
const inputsSample = 8

// estimateBytes estimates the heap that in (one entry per node, as an agent's Explain returns
// them) holds: the slice, plus the first node's inputs in full (what they share with the other
// nodes, such as the pod's estimate, included), plus, for every other node, the mean of what
// up to inputsSample-1 nodes spread over the list add beyond what was already counted. The nodes
// of one answer have inputs of one shape, so a sample tells the whole; walking every node
// would cost as much as building them. The figure counts the maps', pointers', slices' and
// strings' allocations (Go's swiss maps, size classes rounded to 16 bytes), not the runtime's
// own bookkeeping: an estimate, within some tens of percent.
func estimateBytes(in []framework.Inputs) int64 {
	n := len(in)
	if n == 0 {
		return 0
	}
	w := walker{seen: map[uintptr]bool{}}
	total := roundSize(int64(n) * int64(unsafe.Sizeof(framework.Inputs(nil))))
	total += w.bytes(reflect.ValueOf(in[0]))
	k := min(n, inputsSample) - 1
	if k == 0 {
		return total
	}
	var sampled int64
	for j := 1; j <= k; j++ {
		sampled += w.bytes(reflect.ValueOf(in[j*(n-1)/k]))
	}
	return total + sampled*int64(n-1)/int64(k)
}

// walker sums the heap bytes reachable from values, counting each allocation once.
type walker struct {
	seen map[uintptr]bool
}

// first reports whether the allocation at p (not nil) is met for the first time.
func (w *walker) first(p unsafe.Pointer) bool {
	if w.seen[uintptr(p)] {
		return false
	}
	w.seen[uintptr(p)] = true
	return true
}

// bytes returns the heap bytes v refers to beyond its own storage (which its holder counts).
func (w *walker) bytes(v reflect.Value) int64 {
	switch v.Kind() {
	case reflect.String:
		if v.Len() == 0 || !w.first(unsafe.Pointer(unsafe.StringData(v.String()))) {
			return 0
		}
		return roundSize(int64(v.Len()))
	case reflect.Pointer:
		if v.IsNil() || !w.first(v.UnsafePointer()) {
			return 0
		}
		return roundSize(int64(v.Type().Elem().Size())) + w.bytes(v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			return 0
		}
		e := v.Elem()
		switch e.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
			return w.bytes(e) // held in the interface itself
		}
		// A boxed value: its box cannot be told from another's, so it counts every time.
		return roundSize(int64(e.Type().Size())) + w.bytes(e)
	case reflect.Map:
		if v.IsNil() || !w.first(v.UnsafePointer()) {
			return 0
		}
		t := v.Type()
		total := mapBytes(v.Len(), int64(t.Key().Size()+t.Elem().Size()))
		it := v.MapRange()
		for it.Next() {
			total += w.bytes(it.Key()) + w.bytes(it.Value())
		}
		return total
	case reflect.Slice:
		if v.IsNil() || v.Cap() == 0 || !w.first(v.UnsafePointer()) {
			return 0
		}
		total := roundSize(int64(v.Cap()) * int64(v.Type().Elem().Size()))
		for i := range v.Len() {
			total += w.bytes(v.Index(i))
		}
		return total
	case reflect.Array:
		var total int64
		for i := range v.Len() {
			total += w.bytes(v.Index(i))
		}
		return total
	case reflect.Struct:
		var total int64
		for i := range v.NumField() {
			total += w.bytes(v.Field(i))
		}
		return total
	}
	return 0 // numbers, booleans: held in place
}

// mapBytes is what a Go (swiss) map of n entries of slot bytes each allocates: its header, and
// groups of 8 slots and 8 control bytes, filled at most 7/8.
func mapBytes(n int, slot int64) int64 {
	groups := int64(1)
	for groups*7 < int64(n) {
		groups *= 2
	}
	total := 48 + groups*(8+8*slot)
	if n > 8 {
		total += 64 // the table and its directory
	}
	return total
}

// roundSize rounds an allocation of b bytes up to a multiple of 16 (Go's size classes, roughly).
func roundSize(b int64) int64 { return (b + 15) &^ 15 }
