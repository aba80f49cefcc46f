package congestion

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// newHandler serves a congestion agent with the default configuration, nodes in its lookup.
func newHandler(t testing.TB, nodes []*corev1.Node) http.Handler {
	t.Helper()
	a, err := New(DefaultConfig(), framework.NewHandle(nil))
	if err != nil {
		t.Fatal(err)
	}
	return extendertest.NewHandler(t, extendertest.LookupOf(nodes), a)
}

// requestArgs is the request for a pod "p" and nodes, as full Node objects or as names.
func requestArgs(nodes []*corev1.Node, names bool) extenderv1.ExtenderArgs {
	return extendertest.Args(fixtures.MakePod().Name("p").Namespace("default").Obj(), nodes, names)
}

// TestRequestForms: full nodes and node names give the same scores (M 100).
func TestRequestForms(t *testing.T) {
	nodes := []*corev1.Node{fixtures.MakeNode().Name("a").Annotation(Annotation, "0").Obj(), fixtures.MakeNode().Name("b").Annotation(Annotation, "25").Obj(), fixtures.MakeNode().Name("c").Annotation(Annotation, "100").Obj(), fixtures.MakeNode().Name("d").Obj(), fixtures.MakeNode().Name("e").Annotation(Annotation, "35").Obj()}
	h := newHandler(t, nodes)
	full := extendertest.Prioritize(t, h, "congestion", requestArgs(nodes, false))
	names := extendertest.Prioritize(t, h, "congestion", requestArgs(nodes, true))
	want := extenderv1.HostPriorityList{{Host: "a", Score: 10}, {Host: "b", Score: 8}, {Host: "c", Score: 0},
		{Host: "d", Score: 10}, {Host: "e", Score: 7}}
	if diff := cmp.Diff(want, full); diff != "" {
		t.Errorf("full nodes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("node names (-want +got):\n%s", diff)
	}
}

// benchNodes returns n nodes with kubeadm-like annotations and a congestion factor in 0..149.
func benchNodes(n int) []*corev1.Node {
	nodes := make([]*corev1.Node, n)
	for i := range nodes {
		name := fmt.Sprintf("node-%05d", i)
		nodes[i] = fixtures.MakeNode().Name(name).Annotations(map[string]string{
			"kubeadm.alpha.kubernetes.io/cri-socket":                 "unix:///var/run/containerd/containerd.sock",
			"node.alpha.kubernetes.io/ttl":                           "0",
			"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			Annotation: strconv.Itoa(i * 7919 % 150),
		}).Allocatable(fixtures.Res{corev1.ResourceCPU: "16"}).Obj()
	}
	return nodes
}

func BenchmarkScore(b *testing.B) {
	a, err := New(DefaultConfig(), framework.NewHandle(nil))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{500, 5000} {
		nodes := benchNodes(n)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				extendertest.Must(a.score(b.Context(), &corev1.Pod{}, nodes))
			}
		})
	}
}

// BenchmarkHTTP measures the priority through the HTTP handler, request decoding and answer
// encoding included (httptest, no network), in the NodeNames form.
func BenchmarkHTTP(b *testing.B) {
	for _, n := range []int{500, 5000} {
		nodes := benchNodes(n)
		h := newHandler(b, nodes)
		body := extendertest.Body(b, requestArgs(nodes, true))
		b.Run("names/"+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				extendertest.Post(b, h, "/scheduler/priorities/congestion", body)
			}
		})
	}
}
