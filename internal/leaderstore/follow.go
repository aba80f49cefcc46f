package leaderstore

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Informer returns an informer over a store's ConfigMaps in namespace (those labelled
// app.kubernetes.io/managed-by=managedBy, as Store writes them), for a reader's Follow. Run
// it, or start the returned factory, before reading.
func Informer(client kubernetes.Interface, namespace, managedBy string) (cache.SharedIndexInformer, informers.SharedInformerFactory) {
	f := informers.NewSharedInformerFactoryWithOptions(client, 10*time.Minute, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app.kubernetes.io/managed-by=" + managedBy }))
	return f.Core().V1().ConfigMaps().Informer(), f
}

// Follow calls read with every ConfigMap the informer adds or updates: a reader that does not
// write (no Lease) keeps up with what the writer stores, as soon as it is stored.
func Follow(inf cache.SharedIndexInformer, read func(*corev1.ConfigMap)) error {
	each := func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			read(cm)
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    each,
		UpdateFunc: func(_, obj any) { each(obj) },
	})
	return err
}
