package safe

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// benchNodes returns n realistic nodes: the labels and annotations a kubeadm node carries, 16
// cpus and 64 GiB, and the safe annotations of an utilization drawn in [0.1, 0.95] with a
// spread in [0.01, 0.15] of allocatable; a fifth carry a forecast (half in each spelling) and one
// in twenty has no statistics.
func benchNodes(n int) []*corev1.Node {
	r := rand.New(rand.NewPCG(42, 42))
	const cpuMilli, memBytes = 16000, 64 << 30
	nodes := make([]*corev1.Node, n)
	for i := range nodes {
		name := fmt.Sprintf("node-%05d", i)
		a := map[string]string{
			"kubeadm.alpha.kubernetes.io/cri-socket":                 "unix:///var/run/containerd/containerd.sock",
			"node.alpha.kubernetes.io/ttl":                           "0",
			"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			"csi.volume.kubernetes.io/nodeid":                        `{"ebs.csi.aws.com":"i-0123456789abcdef0"}`,
			"flannel.alpha.coreos.com/backend-type":                  "vxlan",
			"flannel.alpha.coreos.com/public-ip":                     "10.0.0." + strconv.Itoa(i%250),
		}
		if i%20 != 0 {
			put := func(mean, std, forecast string, capacity float64) {
				u, s := 0.1+0.85*r.Float64(), 0.01+0.14*r.Float64()
				// Averages over samples print with every digit (as Python's str(float) does).
				a[mean] = strconv.FormatFloat(capacity*(1-u), 'g', -1, 64)
				a[std] = strconv.FormatFloat(capacity*s, 'g', -1, 64)
				if i%5 == 1 {
					a[forecast] = strconv.FormatFloat(capacity*(1-u)*(0.8+0.4*r.Float64()), 'f', 0, 64)
				}
			}
			cpuForecast, memForecast := nodestats.ForcastedFreeCPU, nodestats.ForcastedFreeMemory
			if i%10 == 1 {
				cpuForecast, memForecast = nodestats.ForecastedFreeCPU, nodestats.ForecastedFreeMemory
			}
			put(nodestats.MeanFreeCPU, nodestats.StdFreeCPU, cpuForecast, cpuMilli)
			put(nodestats.MeanFreeMemory, nodestats.StdFreeMemory, memForecast, memBytes)
		}
		nodes[i] = fixtures.MakeNode().Name(name).Annotations(a).Labels(map[string]string{
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			"node.kubernetes.io/instance-type": "m5.4xlarge", "topology.kubernetes.io/zone": "eu-west-1a",
		}).Allocatable(fixtures.Res{
			corev1.ResourceCPU:              "15890m",
			corev1.ResourceMemory:           "65843012Ki",
			corev1.ResourcePods:             "110",
			corev1.ResourceEphemeralStorage: "95551679124",
		}).Obj()
	}
	return nodes
}

func benchmark(b *testing.B, fn func(*Agent) func(context.Context, *corev1.Pod, []*corev1.Node)) {
	a := newAgent(b, DefaultConfig(), nil)
	pod := makePod("500m", "1Gi")
	for _, n := range []int{500, 5000} {
		nodes := benchNodes(n)
		call := fn(a)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				call(context.Background(), pod, nodes)
			}
		})
	}
}

func BenchmarkFilterOverload(b *testing.B) {
	benchmark(b, func(a *Agent) func(context.Context, *corev1.Pod, []*corev1.Node) {
		return func(ctx context.Context, p *corev1.Pod, n []*corev1.Node) {
			extendertest.Must(a.filterOverload(ctx, p, n))
		}
	})
}

func BenchmarkScoreOverload(b *testing.B) {
	benchmark(b, func(a *Agent) func(context.Context, *corev1.Pod, []*corev1.Node) {
		return func(ctx context.Context, p *corev1.Pod, n []*corev1.Node) {
			extendertest.Must(a.scoreOverload(ctx, p, n))
		}
	})
}

func BenchmarkScoreBalance(b *testing.B) {
	benchmark(b, func(a *Agent) func(context.Context, *corev1.Pod, []*corev1.Node) {
		return func(ctx context.Context, p *corev1.Pod, n []*corev1.Node) {
			extendertest.Must(a.scoreBalance(ctx, p, n))
		}
	})
}
