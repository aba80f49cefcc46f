//go:build perf

// Package perf runs kube-scheduler's own benchmark (k8s.io/kubernetes/test/integration/
// scheduler_perf) with the agents' plugins registered as out-of-tree plugins: SchedulingBasic
// with the default profile, and the same workload with the plugins enabled, on nodes carrying
// the agents' annotations. It starts etcd from PATH and an in-process kube-apiserver.
// Usage: make bench-perf.
package perf

import (
	"fmt"
	"os"
	"testing"

	_ "k8s.io/component-base/logs/json/register"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"

	"github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/scheduler/adapter"
)

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
	perf.RunBenchmarkPerfScheduling(b, "performance-config.yaml", "kube-safe-scheduler", registry(b))
}
