package congestion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/server"
)

type lookup map[string]*corev1.Node

func (l lookup) Node(name string) (*corev1.Node, bool) { n, ok := l[name]; return n, ok }

func newHandler(t testing.TB, nodes []*corev1.Node) http.Handler {
	t.Helper()
	a, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	l := lookup{}
	for _, n := range nodes {
		l[n.Name] = n
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	h, err := server.New([]framework.Agent{a}, server.Options{Lookup: l, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func requestBody(t testing.TB, nodes []*corev1.Node, names bool) []byte {
	t.Helper()
	args := extenderv1.ExtenderArgs{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}}
	if names {
		list := make([]string, len(nodes))
		for i, n := range nodes {
			list[i] = n.Name
		}
		args.NodeNames = &list
	} else {
		args.Nodes = &corev1.NodeList{}
		for _, n := range nodes {
			args.Nodes.Items = append(args.Nodes.Items, *n)
		}
	}
	body, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func prioritize(t testing.TB, h http.Handler, body []byte) extenderv1.HostPriorityList {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/scheduler/priorities/congestion", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var out extenderv1.HostPriorityList
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRequestForms: full nodes and node names give the same scores (M 100).
func TestRequestForms(t *testing.T) {
	nodes := []*corev1.Node{makeNode("a", "0"), makeNode("b", "25"), makeNode("c", "100"), makeNode("d", ""), makeNode("e", "35")}
	h := newHandler(t, nodes)
	full, names := prioritize(t, h, requestBody(t, nodes, false)), prioritize(t, h, requestBody(t, nodes, true))
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
		nodes[i] = &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
				"kubeadm.alpha.kubernetes.io/cri-socket":                 "unix:///var/run/containerd/containerd.sock",
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
				Annotation: strconv.Itoa(i * 7919 % 150),
			}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16")}},
		}
	}
	return nodes
}

func BenchmarkScore(b *testing.B) {
	a, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{500, 5000} {
		nodes := benchNodes(n)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a.score(b.Context(), &corev1.Pod{}, nodes)
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
		body := requestBody(b, nodes, true)
		b.Run("names/"+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/scheduler/priorities/congestion", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code, rec.Body)
				}
			}
		})
	}
}
