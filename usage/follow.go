package usage

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-safe-scheduler/extender/internal/leaderstore"
)

// ConfigMapInformer returns an informer over the learner's ConfigMaps in namespace (those
// labelled app.kubernetes.io/managed-by=ManagedBy), for a reader's Follow. Run it, or start
// the returned factory, before reading.
func ConfigMapInformer(client kubernetes.Interface, namespace string) (cache.SharedIndexInformer, informers.SharedInformerFactory) {
	return leaderstore.Informer(client, namespace, ManagedBy)
}

// Follow keeps l, read-only, filled with what the writer stores: each shard of object (the
// ConfigMaps object-0, object-1, ...) the informer adds or updates replaces the workloads it
// holds. A workload the writer evicted stays in l until l's own bound evicts it.
//
// The reader estimates at its own percentile (safe's SAFE_ESTIMATE_PERCENTILE, the one placement
// uses); the writer measures its estimates' error (usage_learner_estimate_error, the drift alert)
// at its USAGE_PERCENTILE. When the two differ, Follow warns, once per percentile it reads: the
// alert then measures estimates that placement does not use.
func Follow(l *Learner, inf cache.SharedIndexInformer, object string, log *logrus.Entry) error {
	var mu sync.Mutex
	warned := map[float64]bool{}
	err := leaderstore.Follow(inf, func(cm *corev1.ConfigMap) {
		if !strings.HasPrefix(cm.Name, object+"-") || cm.Labels[ShardLabel] == "" {
			return
		}
		for _, p := range writerPercentiles(cm.Data) {
			mu.Lock()
			first := !warned[p]
			warned[p] = true
			mu.Unlock()
			if first && math.Abs(p-l.cfg.Percentile) > 1e-9 {
				log.WithFields(logrus.Fields{"writerPercentile": pct(p), "readerPercentile": pct(l.cfg.Percentile)}).
					Warn("the usage learner estimates at another percentile (its USAGE_PERCENTILE) than this reader " +
						"(SAFE_ESTIMATE_PERCENTILE): usage_learner_estimate_error and its drift alert measure the learner's, " +
						"not the estimates placement uses; give both the same value")
			}
		}
		if _, err := l.Merge(cm.Data, true); err != nil {
			log.WithError(err).WithField("configmap", cm.Namespace+"/"+cm.Name).Warn("usage store: some workloads not read")
		}
	})
	if err != nil {
		return fmt.Errorf("following the usage store: %w", err)
	}
	return nil
}
