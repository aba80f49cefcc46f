package harness

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// CRDTimeout bounds the wait for a CustomResourceDefinition to be served.
const CRDTimeout = time.Minute

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ApplyCRDFile applies a file for real (see ApplyFile) and waits until every
// CustomResourceDefinition in it is Established and each of its served versions is listed by
// discovery, so that objects of the new kinds can be applied (Apply maps kinds through
// discovery) and watched at once. It returns the objects as the server answered.
func (c *Cluster) ApplyCRDFile(t T, file string) []*unstructured.Unstructured {
	t.Helper()
	objs := c.ApplyFile(t, file, false)
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind().String() != "CustomResourceDefinition.apiextensions.k8s.io" {
			continue
		}
		var last string
		err := poll(t.Context(), CRDTimeout, func(ctx context.Context) (bool, error) {
			ok, why := crdServed(ctx, c, dyn, o.GetName())
			last = why
			return ok, nil
		})
		if err != nil {
			t.Fatalf("%s: CustomResourceDefinition %s not served within %s: %s", file, o.GetName(), CRDTimeout, last)
		}
	}
	return objs
}

// crdServed reports whether the definition name is Established and discovery lists its
// resource in every served version, and if not, why.
func crdServed(ctx context.Context, c *Cluster, dyn dynamic.Interface, name string) (bool, string) {
	crd, err := dyn.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	established := slices.ContainsFunc(conditions, func(c any) bool {
		m, _ := c.(map[string]any)
		return m["type"] == "Established" && m["status"] == "True"
	})
	if !established {
		return false, "not Established"
	}
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); !served {
			continue
		}
		gv := fmt.Sprintf("%s/%s", group, m["name"])
		list, err := c.Client.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			return false, fmt.Sprintf("discovery of %s: %v", gv, err)
		}
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == plural }) {
			return false, fmt.Sprintf("discovery of %s does not list %s yet", gv, plural)
		}
	}
	return true, ""
}
