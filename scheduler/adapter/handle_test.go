package adapter_test

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/kube-safe-scheduler/extender/framework"
)

// handleAgent records the Handle it is built with.
type handleConfig struct{}

func (handleConfig) Validate() error { return nil }

type handleAgent struct{}

func (handleAgent) Name() string { return "handle" }
func (handleAgent) Filters() []framework.Filter {
	return []framework.Filter{{Name: "handle-fit", Func: func(_ context.Context, _ *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
		return make([]framework.Verdict, len(nodes)), nil
	}}}
}
func (handleAgent) Prioritizers() []framework.Prioritizer { return nil }

// In plugin mode an agent's Handle is the scheduler's: its informer factory (so that the pod and
// node informers are the scheduler's own), client, event recorder and a copy of its client
// configuration, with one dynamic informer factory for every profile.
func TestHandleIsTheSchedulers(t *testing.T) {
	var mu sync.Mutex
	var got []framework.Handle
	reg := framework.Register("handle", func() handleConfig { return handleConfig{} },
		func(_ handleConfig, h framework.Handle) (handleAgent, error) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, h)
			return handleAgent{}, nil
		}, framework.Offer{Filters: []string{"handle-fit"}})
	a := newAdapter(t, reg)

	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	kubeconfig := &rest.Config{Host: "https://127.0.0.1:1"}
	recorder := events.NewFakeRecorder(10)
	registry := plugins.NewInTreeRegistry()
	if err := registry.Merge(a.Registry()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one", "two"} {
		prof := config.KubeSchedulerProfile{SchedulerName: name, Plugins: &config.Plugins{
			QueueSort: config.PluginSet{Enabled: []config.Plugin{{Name: "PrioritySort"}}},
			Bind:      config.PluginSet{Enabled: []config.Plugin{{Name: "DefaultBinder"}}},
			Filter:    config.PluginSet{Enabled: []config.Plugin{{Name: "handle-fit"}}},
		}}
		if _, err := frameworkruntime.NewFramework(t.Context(), registry, &prof,
			frameworkruntime.WithClientSet(client), frameworkruntime.WithInformerFactory(factory),
			frameworkruntime.WithKubeConfig(kubeconfig), frameworkruntime.WithEventRecorder(recorder)); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("%d agents built for two profiles, want 2", len(got))
	}
	for i, h := range got {
		pods, ok := h.PodEvents.(cache.SharedIndexInformer)
		if h.Informers != factory || !ok || pods.GetStore() != factory.Core().V1().Pods().Informer().GetStore() || h.Client != client || h.Events == nil {
			t.Errorf("profile %d: informers, pod events, client or events are not the scheduler's: %+v", i, h)
		}
		if h.KubeConfig == nil || h.KubeConfig == kubeconfig || h.KubeConfig.Host != kubeconfig.Host {
			t.Errorf("profile %d: KubeConfig %v, want a copy of the scheduler's", i, h.KubeConfig)
		}
		if h.Dynamic == nil || h.Dynamic != got[0].Dynamic {
			t.Errorf("profile %d: dynamic informer factory %v, want one shared by every profile", i, h.Dynamic)
		}
		if h.Cluster == nil {
			t.Errorf("profile %d: no Cluster", i)
		}
	}
}
