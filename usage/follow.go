package usage

import (
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// ConfigMapInformer returns an informer over the learner's ConfigMaps in namespace (those
// labelled app.kubernetes.io/managed-by=ManagedBy), for a reader's Follow. Run it, or start
// the returned factory, before reading.
func ConfigMapInformer(client kubernetes.Interface, namespace string) (cache.SharedIndexInformer, informers.SharedInformerFactory) {
	f := informers.NewSharedInformerFactoryWithOptions(client, 10*time.Minute, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app.kubernetes.io/managed-by=" + ManagedBy }))
	return f.Core().V1().ConfigMaps().Informer(), f
}

// Follow keeps l, read-only, filled with what the writer stores: each shard of object (the
// ConfigMaps object-0, object-1, ...) the informer adds or updates replaces the workloads it
// holds. A workload the writer evicted stays in l until l's own bound evicts it.
func Follow(l *Learner, inf cache.SharedIndexInformer, object string, log *logrus.Entry) error {
	read := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok || !strings.HasPrefix(cm.Name, object+"-") || cm.Labels[ShardLabel] == "" {
			return
		}
		if _, err := l.Merge(cm.Data, true); err != nil {
			log.WithError(err).WithField("configmap", cm.Namespace+"/"+cm.Name).Warn("usage store: some workloads not read")
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    read,
		UpdateFunc: func(_, obj any) { read(obj) },
	})
	if err != nil {
		return fmt.Errorf("following the usage store: %w", err)
	}
	return nil
}
