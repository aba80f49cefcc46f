package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/framework/decisions"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// BenchmarkHandler measures the HTTP layer alone (decode, dispatch, encode) with an agent whose
// functions cost nothing, for realistic nodes in both request forms: what every agent pays.
func BenchmarkHandler(b *testing.B) {
	for _, n := range []int{500, 5000} {
		nodes := make([]corev1.Node, n)
		names := make([]string, n)
		for i := range nodes {
			nodes[i] = fixtures.Node(i, nil)
			names[i] = nodes[i].Name
		}
		log := logrus.New()
		log.SetOutput(io.Discard)
		h, err := New([]framework.Agent{testAgent{}}, Options{Lookup: nodesLookup(nodes), Log: log, Registry: prometheus.NewRegistry()})
		if err != nil {
			b.Fatal(err)
		}
		pod := fixtures.Pod("p", "500m", "1Gi")
		full, _ := json.Marshal(extenderv1.ExtenderArgs{Pod: pod, Nodes: &corev1.NodeList{Items: nodes}})
		named, _ := json.Marshal(extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names})
		for _, form := range []struct {
			name string
			body []byte
		}{{"full", full}, {"names", named}} {
			for _, verb := range []string{"predicates", "priorities"} {
				b.Run(fmt.Sprintf("%s/%s/nodes=%d", verb, form.name, n), func(b *testing.B) {
					b.SetBytes(int64(len(form.body)))
					b.ReportAllocs()
					for b.Loop() {
						req := httptest.NewRequest(http.MethodPost, "/scheduler/"+verb+"/label", bytes.NewReader(form.body))
						req.Header.Set("Content-Type", "application/json")
						rec := httptest.NewRecorder()
						h.ServeHTTP(rec, req)
						if rec.Code != 200 {
							b.Fatalf("status %d: %s", rec.Code, rec.Body)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
				})
			}
		}
	}
}

// BenchmarkDecisions measures what keeping decisions for /debug/decisions adds to a request
// (kept=1000, the extender's default) against none kept (kept=0), on 500 nodes, the usual size
// of a call at 5000 nodes; and what reading them costs.
func BenchmarkDecisions(b *testing.B) {
	const n = 500
	nodes := make([]corev1.Node, n)
	names := make([]string, n)
	for i := range nodes {
		nodes[i] = fixtures.Node(i, nil)
		names[i] = nodes[i].Name
	}
	pod := fixtures.Pod("p", "500m", "1Gi")
	named, _ := json.Marshal(extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names})
	log := logrus.New()
	log.SetOutput(io.Discard)
	for _, kept := range []int{0, decisions.DefaultKept} {
		h, err := New([]framework.Agent{testAgent{}}, Options{Lookup: nodesLookup(nodes), Log: log, Registry: prometheus.NewRegistry(), Decisions: decisions.Config{Kept: kept, InputsBytes: decisions.DefaultInputsBytes}})
		if err != nil {
			b.Fatal(err)
		}
		for _, verb := range []string{"predicates", "priorities"} {
			b.Run(fmt.Sprintf("%s/names/nodes=%d/kept=%d", verb, n, kept), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					req := httptest.NewRequest(http.MethodPost, "/scheduler/"+verb+"/label", bytes.NewReader(named))
					req.Header.Set("Content-Type", "application/json")
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != 200 {
						b.Fatalf("status %d: %s", rec.Code, rec.Body)
					}
				}
			})
		}
		if kept == 0 {
			continue
		}
		b.Run(fmt.Sprintf("read/pod/kept=%d", kept), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "/debug/decisions?pod=default/p&limit=10", nil)
				req.RemoteAddr = "127.0.0.1:1"
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
