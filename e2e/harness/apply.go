package harness

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// FieldManager is the field manager of the objects Apply writes.
const FieldManager = "e2e-harness"

// Apply server-side applies every object of a YAML stream, in order, with strict field
// validation (an unknown or duplicate field is an error), as kubectl apply --server-side does.
// With dryRun the API server validates and admits each object without storing it. Namespaced
// objects without a namespace go to "default". It returns the objects as the server answered.
func (c *Cluster) Apply(t T, data []byte, dryRun bool) []*unstructured.Unstructured {
	t.Helper()
	out, err := c.apply(t, data, dryRun)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return out
}

// ApplyFile is Apply on a file's content; errors name the file.
func (c *Cluster) ApplyFile(t T, file string, dryRun bool) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v", err)
	}
	out, err := c.apply(t, data, dryRun)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return out
}

func (c *Cluster) apply(t T, data []byte, dryRun bool) ([]*unstructured.Unstructured, error) {
	objs, err := ReadObjects(data)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery()))
	opts := metav1.PatchOptions{FieldManager: FieldManager, FieldValidation: "Strict", Force: new(true)}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := o.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		body, err := json.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		got, err := ri.Patch(t.Context(), o.GetName(), types.ApplyPatchType, body, opts)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
		out = append(out, got)
	}
	return out, nil
}
