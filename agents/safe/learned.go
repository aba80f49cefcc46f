package safe

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/leaderstore"
	"github.com/kube-safe-scheduler/extender/usage"
)

// With Estimate learned, a pod is estimated at its workload's learned usage: the usage learner
// (package usage, run by the node annotator with USAGE_LEARNER) keeps each workload's
// histograms of usage/request in ConfigMaps; the agent follows them read-only (an informer over
// EstimateNamespace, usage.Follow) and estimates a pod of a trusted workload at the
// EstimatePercentile of its ratios times its request, its memory never below the workload's
// recent peak. A pod of no workload, or of one the learner does not trust yet, keeps its
// request.

// followerMaxWorkloads bounds what the agent keeps of the store: the writer's own bound
// (USAGE_MAX_WORKLOADS) is at most this.
const followerMaxWorkloads = 100000

// learnedEstimator is the Estimator of Estimate learned.
type learnedEstimator struct {
	l *usage.Learner
}

// Estimate implements Estimator: the pod's request scaled by its workload's learned ratios when
// the learner trusts them, else the request. It allocates only the request's computation.
func (e learnedEstimator) Estimate(pod *corev1.Pod) Estimate {
	cpu, memory := framework.CPUMemoryRequests(pod)
	d := e.l.Demand(pod, float64(cpu), float64(memory))
	return Estimate{CPU: d.CPU, Memory: d.Memory, RequestCPU: float64(cpu), RequestMemory: float64(memory),
		SpreadCPU: d.SpreadCPU, SpreadMemory: d.SpreadMemory, Learned: d.Learned, Source: d.Key}
}

// Evidence implements Estimator.
func (e learnedEstimator) Evidence(pod *corev1.Pod) string { return e.l.Evidence(pod) }

// Version implements Estimator.
func (e learnedEstimator) Version() uint64 { return e.l.Version() }

// follower keeps a learner filled from the store's ConfigMaps.
type follower struct {
	client            kubernetes.Interface
	namespace, object string
	factory           informers.SharedInformerFactory
	informer          cache.SharedIndexInformer
	log               *logrus.Entry
}

// newLearned returns the learned estimator of cfg and the follower that fills it, started by
// the agent's Start.
func newLearned(cfg Config, h framework.Handle) (learnedEstimator, *follower, error) {
	if h.Client == nil {
		return learnedEstimator{}, nil, fmt.Errorf("estimate %s (SAFE_ESTIMATE) reads the usage learner's ConfigMaps: it %w", EstimateLearned, framework.ErrNoCluster)
	}
	l, err := usage.NewFollower(float64(cfg.EstimatePercentile)/100, followerMaxWorkloads)
	if err != nil {
		return learnedEstimator{}, nil, err
	}
	f := &follower{client: h.Client, namespace: leaderstore.Namespace(cfg.EstimateNamespace), object: cfg.EstimateObject,
		log: h.Log.WithField("component", "usage-follower")}
	f.informer, f.factory = usage.ConfigMapInformer(h.Client, f.namespace)
	if err := usage.Follow(l, f.informer, f.object, f.log); err != nil {
		return learnedEstimator{}, nil, err
	}
	return learnedEstimator{l: l}, f, nil
}

// followSync bounds how long Start waits for the store's first reading.
const followSync = 30 * time.Second

// start checks that the store can be read (a missing permission stops the program, naming the
// setting), then follows it until ctx is done. It waits, at most followSync, for the first
// reading: the first pods are estimated by what the learner stored.
func (f *follower) start(ctx context.Context) error {
	listCtx, cancel := context.WithTimeout(ctx, followSync)
	defer cancel()
	if _, err := f.client.CoreV1().ConfigMaps(f.namespace).List(listCtx, metav1.ListOptions{Limit: 1,
		LabelSelector: "app.kubernetes.io/managed-by=" + usage.ManagedBy}); err != nil {
		return fmt.Errorf("estimate %s (SAFE_ESTIMATE) reads the usage learner's ConfigMaps in %s (SAFE_ESTIMATE_NAMESPACE): %w "+
			"(the service account needs list and watch on configmaps there)", EstimateLearned, f.namespace, err)
	}
	f.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(listCtx.Done(), f.informer.HasSynced) {
		f.log.Warn("usage store not read yet: pods are estimated at their requests until it is")
	}
	f.log.WithFields(logrus.Fields{"namespace": f.namespace, "configmaps": usage.ShardName(f.object, 0) + ".."}).
		Info("following the usage learner's store")
	return nil
}
