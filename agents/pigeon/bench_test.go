package pigeon

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// benchCluster returns n nodes with all five resources, usage both in their requested-*
// annotations and in a synced fake cache that holds them.
func benchCluster(n int) ([]*corev1.Node, *fakeCluster) {
	r := rand.New(rand.NewPCG(uint64(n), 5))
	c := &fakeCluster{synced: true, allocated: map[string]framework.Amounts{}}
	nodes := make([]*corev1.Node, n)
	for i := range nodes {
		cpu, memGi, gpu, ephGi := int64(16+16*r.IntN(4)), int64(64<<r.IntN(3)), int64(8*r.IntN(2)), int64(100+100*r.IntN(4))
		used := framework.Amounts{
			corev1.ResourceCPU: r.Int64N(cpu * 1000), corev1.ResourceMemory: r.Int64N(memGi << 30),
			corev1.ResourcePods: r.Int64N(110), "nvidia.com/gpu": r.Int64N(gpu + 1),
			corev1.ResourceEphemeralStorage: r.Int64N(ephGi << 30),
		}
		ann := map[string]string{}
		for j, name := range resourceNames {
			ann[usageAnnotations[j]] = strconv.FormatInt(used[name], 10)
		}
		nodes[i] = fixtures.MakeNode().Name(fmt.Sprintf("node-%05d", i)).Allocatable(fixtures.Res{
			corev1.ResourceCPU: strconv.FormatInt(cpu, 10), corev1.ResourceMemory: fmt.Sprint(memGi, "Gi"),
			corev1.ResourcePods: "110", "nvidia.com/gpu": strconv.FormatInt(gpu, 10),
			corev1.ResourceEphemeralStorage: fmt.Sprint(ephGi, "Gi"),
		}).Annotations(ann).
			ResourceVersion(strconv.Itoa(i + 1)). // as every node from the API server has
			Obj()
		c.allocated[nodes[i].Name] = used
	}
	c.nodes = nodes
	c.byName = map[string]*corev1.Node{}
	for _, n := range nodes {
		c.byName[n.Name] = n
	}
	return nodes, c
}

func benchPod() *corev1.Pod {
	return pod("bench").Req(fixtures.Res{
		corev1.ResourceCPU: "500m", corev1.ResourceMemory: "1Gi", "nvidia.com/gpu": "1", corev1.ResourceEphemeralStorage: "1Gi",
	}).Obj()
}

// reportP99 reports the 99th percentile of the calls' durations, in milliseconds.
func reportP99(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[(len(d)*99+99)/100-1].Nanoseconds())/1e6, "p99-ms")
}

// BenchmarkPrioritize times one prioritize call with 5 resources, each with a new pod, and
// reports the p99 latency (run with -benchtime=200x for p99 over 200 calls):
//   - annotations: no cluster access; the system is the request's n nodes;
//   - cluster: the system is the cache's n nodes and the request offers all n;
//   - cluster-5000/candidates-500: the cache holds 5000 nodes and the request offers 500,
//     what a scheduler with default percentageOfNodesToScore sends.
func BenchmarkPrioritize(b *testing.B) {
	for _, obj := range []Objective{ABinpack, LoadBalance, Consolidate, FewestNodes} {
		for _, n := range []int{500, 5000} {
			nodes, cache := benchCluster(n)
			for _, mode := range []string{"annotations", "cluster"} {
				var cl framework.Cluster
				if mode == "cluster" {
					cl = cache
				}
				b.Run(fmt.Sprintf("%s/%s/nodes-%d", obj, mode, n), func(b *testing.B) {
					benchPrioritize(b, obj, cl, nodes)
				})
			}
			if n == 5000 {
				b.Run(fmt.Sprintf("%s/cluster-5000/candidates-500", obj), func(b *testing.B) {
					benchPrioritize(b, obj, cache, nodes[:500])
				})
			}
		}
	}
}

func benchPrioritize(b *testing.B, obj Objective, cl framework.Cluster, nodes []*corev1.Node) {
	a := newAgent(b, config(MaxResources, obj), cl)
	fn := a.Prioritizers()[0].Func
	p := benchPod()
	ctx := context.Background()
	fn(ctx, p, nodes) // seeds from the cache, outside the timing
	durations := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.UID = types.UID(strconv.Itoa(i))
		start := time.Now()
		fn(ctx, p, nodes)
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	reportP99(b, durations)
}

// BenchmarkHTTPNodeNames times the whole HTTP round trip through package server for a
// nodeCacheCapable request naming all 5000 nodes of the cache (A_BINPACK, 5 resources).
func BenchmarkHTTPNodeNames(b *testing.B) {
	nodes, cache := benchCluster(5000)
	h := extendertest.NewHandler(b, cache, newAgent(b, config(MaxResources, ABinpack), cache))
	p := benchPod()
	args := extendertest.Args(p, nodes, true) // args.Pod is p: each call below encodes its new UID
	durations := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.UID = types.UID(strconv.Itoa(i))
		req := extendertest.NewRequest("/scheduler/priorities/"+PriorityPigeonHoling, extendertest.Body(b, args))
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req)
		durations = append(durations, time.Since(start))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
	b.StopTimer()
	reportP99(b, durations)
}

// BenchmarkEvaluate compares the running-sum evaluation with the naive one (the objective
// recomputed over all nodes for each candidate) on the pure maths alone: A_BINPACK, 5
// resources, 500 nodes, every node a candidate.
func BenchmarkEvaluate(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	sys := make([]nodeState, 500)
	cands := make([]candidate, len(sys))
	for i := range sys {
		sys[i] = randomNode(r, MaxResources)
		cands[i] = candidate{index: i}
	}
	demand := vec{1, 1, 1, 0, 1}
	for name, f := range map[string]func(Objective, int, int, []nodeState, []candidate, *vec, float64) ([]float64, []bool){
		"fast": evaluate, "naive": naiveEvaluate,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				f(ABinpack, MaxResources, 0, sys, cands, &demand, 0.5)
			}
		})
	}
}
