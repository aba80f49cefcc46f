package adapter

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPositionTableAsMap checks the position table against a map assigned in list order (what
// the lists held before): every listed node found at its last position, nodes not listed (and
// nil) not found, the count of distinct nodes, over lists of 0 to 5000 nodes with nil entries
// and nodes listed twice.
func TestPositionTableAsMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 53))
	pool := make([]*corev1.Node, 6000)
	for i := range pool {
		pool[i] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("n", i)}}
	}
	for _, size := range []int{0, 1, 2, 7, 8, 9, 100, 2000, 5000} {
		for trial := range 5 {
			perm := rng.Perm(len(pool))
			src := make([]*corev1.Node, size)
			want := map[*corev1.Node]int32{}
			for i := range src {
				switch r := rng.IntN(50); {
				case r == 0:
					src[i] = nil
				case r == 1 && i > 0:
					src[i] = src[rng.IntN(i)] // listed again (nil too)
				default:
					src[i] = pool[perm[i]]
				}
				if src[i] != nil {
					want[src[i]] = int32(i)
				}
			}
			tbl := newPositionTable(src)
			if tbl.len() != len(want) {
				t.Fatalf("%d nodes, trial %d: %d distinct nodes, want %d", size, trial, tbl.len(), len(want))
			}
			for _, n := range pool {
				j, ok := tbl.get(src, n)
				w, wok := want[n]
				if ok != wok || j != w {
					t.Fatalf("%d nodes, trial %d: %s at (%d, %t), want (%d, %t)", size, trial, n.Name, j, ok, w, wok)
				}
			}
			if _, ok := tbl.get(src, nil); ok {
				t.Fatalf("%d nodes: nil found", size)
			}
		}
	}
	var empty positionTable
	if _, ok := empty.get(nil, pool[0]); ok {
		t.Fatal("the zero table found a node")
	}
}
