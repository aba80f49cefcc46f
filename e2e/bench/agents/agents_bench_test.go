package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	allagents "github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// agents returns every agent with its default configuration.
func agents(b *testing.B) []framework.Agent {
	var out []framework.Agent
	for _, r := range allagents.All {
		log := logrus.New()
		log.SetOutput(io.Discard)
		a, err := r.New(r.NewConfig(), framework.NewHandle(log.WithField("agent", r.Name)))
		if errors.Is(err, framework.ErrNoCluster) {
			continue // an agent that needs a cluster (telemetry) is measured by its own tests
		}
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// nodes returns n realistic nodes (16 cores, 64 GiB) carrying every agent's annotations, with
// varied values: usage statistics, congestion, allocation.
func nodes(n int) []corev1.Node {
	out := make([]corev1.Node, n)
	for i := range out {
		out[i] = fixtures.Node(i, map[string]string{
			"mean-free-cpu":           strconv.Itoa(4000 + (i*7919)%10000),
			"std-free-cpu":            strconv.Itoa(200 + (i*104729)%1500),
			"mean-free-memory":        strconv.FormatInt(int64(16+(i*31)%40)<<30, 10),
			"std-free-memory":         strconv.FormatInt(int64(1+(i*17)%4)<<30, 10),
			"forcasted-free-cpu":      strconv.Itoa(5000 + (i*31)%8000),
			"congestion-factor":       strconv.Itoa((i * 37) % 100),
			"requested-cpu":           strconv.Itoa((i * 997) % 12000),
			"requested-memory":        strconv.FormatInt(int64((i*13)%48)<<30, 10),
			"requested-pods":          strconv.Itoa(i % 100),
			"template.extender/score": strconv.Itoa(i % 11),
		})
	}
	return out
}

// BenchmarkAgents serves each agent function through the real handler. Besides ns/op it
// reports ns/node and the p99 latency of the iterations.
func BenchmarkAgents(b *testing.B) {
	all := agents(b)
	for _, n := range []int{500, 5000} {
		ns := nodes(n)
		names := make([]string, n)
		lk := extendertest.Lookup{}
		for i := range ns {
			names[i] = ns[i].Name
			lk[names[i]] = &ns[i]
		}
		h := extendertest.NewHandler(b, lk, all...)
		// A pod with a new UID each call, as a stream of pods (pigeon counts each pod once).
		bodies := func(full bool) func(i int) []byte {
			return func(i int) []byte {
				pod := fixtures.Pod(fmt.Sprintf("p-%d", i), "500m", "1Gi")
				args := extenderv1.ExtenderArgs{Pod: pod}
				if full {
					args.Nodes = &corev1.NodeList{Items: ns}
				} else {
					args.NodeNames = &names
				}
				body, _ := json.Marshal(args)
				return body
			}
		}
		for _, a := range all {
			var routes []string
			for _, f := range a.Filters() {
				routes = append(routes, "/scheduler/predicates/"+f.Name)
			}
			for _, p := range a.Prioritizers() {
				routes = append(routes, "/scheduler/priorities/"+p.Name)
			}
			for _, route := range routes {
				for _, form := range []string{"names", "full"} {
					b.Run(fmt.Sprintf("%s%s/%s/nodes=%d", a.Name(), route[len("/scheduler"):], form, n), func(b *testing.B) {
						run(b, h, route, bodies(form == "full"), n)
					})
				}
			}
		}
	}
}

func run(b *testing.B, h http.Handler, route string, body func(int) []byte, n int) {
	// Bodies are prepared outside the timer: the scheduler's marshalling is not ours to count.
	const distinct = 8
	prepared := make([][]byte, distinct)
	for i := range prepared {
		prepared[i] = body(i)
	}
	b.SetBytes(int64(len(prepared[0])))
	b.ReportAllocs()
	var lat []time.Duration
	i := 0
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, route, bytes.NewReader(prepared[i%distinct]))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req)
		lat = append(lat, time.Since(start))
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: status %d: %s", route, rec.Code, rec.Body)
		}
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
}
