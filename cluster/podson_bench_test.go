package cluster

import (
	"fmt"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

// BenchmarkPodsOn is what an agent pays for a node's pods (safe's load placed since a node's
// statistics asks for them when the node's pods or statistics change): ten pods of the shape
// the cache keeps.
func BenchmarkPodsOn(b *testing.B) {
	s := NewCache(fake.NewClientset(), nil, quietLog())
	for i := range 10 {
		p := makePod(fmt.Sprint("p", i), "n1", "100m", "64Mi")
		s.podChanged(strip1(p))
	}
	b.ReportAllocs()
	for b.Loop() {
		if pods, _ := s.PodsOn("n1"); len(pods) != 10 {
			b.Fatalf("%d pods", len(pods))
		}
	}
}

// strip1 is what the pod informer stores of p.
func strip1(p any) any {
	o, _ := strip(p)
	return o
}
