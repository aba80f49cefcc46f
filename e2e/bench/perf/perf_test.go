//go:build perf

// Package perf runs kube-scheduler's own benchmark (k8s.io/kubernetes/test/integration/
// scheduler_perf) with the agents' plugins registered as out-of-tree plugins: SchedulingBasic
// with the default profile, and workloads on nodes carrying the agents' annotations with the
// default profile and with the plugins enabled. It starts etcd from PATH and an in-process
// kube-apiserver. Usage: make bench-perf, or bench-e2e's -perf (one table with bench-e2e's modes).
//
// Two additions to scheduler_perf's figures:
//   - nodes created from node-annotated.yaml (marked by its annotation) get, right after they are
//     created, the usage statistics a node annotator writes (internal/testkit/fixtures.UsageStatistics,
//     as bench-e2e's nodes: a fifth near the safe agent's thresholds, timestamped now) and a
//     congestion factor;
//   - each workload prints "perf-cpu <benchmark> ms/pod=... pods=... seconds=...": the test
//     process's CPU time (user + system) per pod over its last PERF_MEASURED_PODS (default 1000)
//     bindings, counted from scheduler_pod_scheduling_attempts every 100 ms. The process is the
//     scheduler and the in-process kube-apiserver: the figure's differences between profiles
//     are the scheduler's.
package perf

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/kubernetes/pkg/scheduler"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"

	"github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/scheduler/adapter"
)

// annotatedMarker is the annotation node-annotated.yaml puts on the nodes to be given statistics.
const annotatedMarker = "kube-safe-scheduler.perf/statistics"

func TestMain(m *testing.M) {
	if err := perf.InitTests(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	m.Run()
}

// registry is the plugins of every agent, as kube-safe-scheduler registers them.
func registry(b *testing.B) frameworkruntime.Registry {
	a, err := adapter.New(agents.All)
	if err != nil {
		b.Fatal(err)
	}
	return a.Registry()
}

func BenchmarkPerfScheduling(b *testing.B) {
	measured := 1000
	if v := os.Getenv("PERF_MEASURED_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("PERF_MEASURED_PODS=%q: want a positive number of pods", v)
		}
		measured = n
	}
	perf.RunBenchmarkPerfScheduling(b, "performance-config.yaml", "kube-safe-scheduler", registry(b),
		perf.WithNodeUpdateFn(annotateNodes),
		perf.WithPrepareFn(func(tCtx ktesting.TContext) error { sampleCPU(tCtx, measured); return nil }))
}

// annotateNodes gives the nodes marked by node-annotated.yaml the statistics an annotator
// writes and a congestion factor, then waits until the scheduler's cache holds them.
func annotateNodes(tCtx ktesting.TContext, sched *scheduler.Scheduler, _ *perf.Workload, nodes *v1.NodeList) error {
	var marked []v1.Node
	for _, n := range nodes.Items {
		if _, ok := n.Annotations[annotatedMarker]; ok {
			marked = append(marked, n)
		}
	}
	if len(marked) == 0 {
		return nil
	}
	now := time.Now()
	patches := make(chan int)
	errs := make(chan error, len(marked))
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range patches {
				n := &marked[i]
				a := fixtures.UsageStatistics(i, n.Status.Allocatable.Cpu().MilliValue(), n.Status.Allocatable.Memory().Value(), now)
				a["congestion-factor"] = strconv.Itoa((i * 37) % 100)
				patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": a}})
				if err == nil {
					_, err = tCtx.Client().CoreV1().Nodes().Patch(tCtx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{})
				}
				if err != nil {
					errs <- fmt.Errorf("annotating node %s: %w", n.Name, err)
				}
			}
		}()
	}
	for i := range marked {
		patches <- i
	}
	close(patches)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Printf("perf: gave %d nodes an annotator's statistics\n", len(marked))
	return wait.PollUntilContextTimeout(tCtx, 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		for _, n := range marked {
			info, err := sched.Cache.GetNode(n.Name)
			if err != nil || info.Node().Annotations["mean-free-cpu"] == "" {
				return false, nil
			}
		}
		return true, nil
	})
}

// sampleCPU reads the pods scheduled and the process's CPU time every 100 ms until the workload
// ends, then prints the CPU time per pod over the last measured bindings.
func sampleCPU(tCtx ktesting.TContext, measured int) {
	type sample struct {
		pods int
		cpu  time.Duration
		at   time.Time
	}
	var (
		mu      sync.Mutex
		samples []sample // one per change of the count
	)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tCtx.Done():
				return
			case <-tick.C:
			}
			pods, cpu := scheduledPods(), processCPU()
			mu.Lock()
			if len(samples) == 0 || pods != samples[len(samples)-1].pods {
				samples = append(samples, sample{pods, cpu, time.Now()})
			}
			mu.Unlock()
		}
	}()
	name := tCtx.TB().Name()
	tCtx.TB().Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if len(samples) < 2 {
			fmt.Printf("perf-cpu %s no-bindings\n", name)
			return
		}
		last := samples[len(samples)-1]
		// from: the last sample at or before the first measured binding.
		from := samples[0]
		for _, s := range samples {
			if s.pods > last.pods-measured {
				break
			}
			from = s
		}
		pods := last.pods - from.pods
		if pods < 1 {
			fmt.Printf("perf-cpu %s no-bindings\n", name)
			return
		}
		fmt.Printf("perf-cpu %s ms/pod=%.3f pods=%d seconds=%.1f\n", name,
			float64(last.cpu-from.cpu)/float64(time.Millisecond)/float64(pods), pods, last.at.Sub(from.at).Seconds())
	})
}

// scheduledPods is the number of pods the scheduler has bound, every profile: the samples of
// scheduler_pod_scheduling_attempts, which kube-scheduler observes once per bound pod, beside
// scheduler_schedule_attempts_total{result="scheduled"}. Read from that one histogram: gathering
// the whole registry (the in-process kube-apiserver's metrics too) every 100 ms took 12 % of
// the process's CPU in a 5000-node churn run, and more per pod the slower the profile.
func scheduledPods() int {
	h := metrics.PodSchedulingAttempts.ObserverMetric // nil until the scheduler registers its metrics
	if h == nil {
		return 0
	}
	n, err := testutil.GetHistogramMetricCount(h)
	if err != nil {
		return 0
	}
	return int(n)
}

// processCPU is the user + system time of this process.
func processCPU() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
