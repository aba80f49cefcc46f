package leaderstore

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Write creates the ConfigMap, then updates it in place keeping what stamp does not set.
func TestWrite(t *testing.T) {
	client := fake.NewClientset()
	stamp := func(v string) func(*corev1.ConfigMap) {
		return func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"k": v} }
	}
	if err := Write(t.Context(), client, "ns", "cm", stamp("1")); err != nil {
		t.Fatal(err)
	}
	cm, err := client.CoreV1().ConfigMaps("ns").Get(t.Context(), "cm", metav1.GetOptions{})
	if err != nil || cm.Data["k"] != "1" {
		t.Fatalf("created %+v, %v", cm, err)
	}
	cm.Labels = map[string]string{"kept": "yes"}
	if _, err := client.CoreV1().ConfigMaps("ns").Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Write(t.Context(), client, "ns", "cm", stamp("2")); err != nil {
		t.Fatal(err)
	}
	cm, err = client.CoreV1().ConfigMaps("ns").Get(t.Context(), "cm", metav1.GetOptions{})
	if err != nil || cm.Data["k"] != "2" || cm.Labels["kept"] != "yes" {
		t.Fatalf("updated %+v, %v", cm, err)
	}
}

func TestNamespace(t *testing.T) {
	if got := Namespace("mine"); got != "mine" {
		t.Errorf("Namespace(mine) = %q", got)
	}
	// Outside a pod (no service account file): kube-system.
	if got := Namespace(""); got != "kube-system" {
		t.Errorf("Namespace(\"\") = %q, want kube-system", got)
	}
	if a, b := Identity(), Identity(); a == b {
		t.Errorf("two identities are equal: %q", a)
	}
}
