package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestOnPodUpdate(t *testing.T) {
	existing := makePod("a", "n1", "100m", "64Mi")
	client := fake.NewClientset(existing)
	c := NewCache(client, quietLog())
	var mu sync.Mutex
	var got []string
	synced, err := c.OnPodUpdate(func(old, new *corev1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case old == nil:
			got = append(got, "add "+new.Name)
		case new == nil:
			got = append(got, "delete "+old.Name+" "+string(old.Status.Phase))
		default:
			got = append(got, "update "+new.Name+" "+string(old.Status.Phase)+"->"+string(new.Status.Phase)+" restarts "+
				string(rune('0'+new.Status.ContainerStatuses[0].RestartCount)))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stop := c.Start(ctx)
	defer stop()
	if !c.WaitForSync(ctx) {
		t.Fatal("no sync")
	}
	for !synced() {
		time.Sleep(10 * time.Millisecond)
	}
	p := existing.DeepCopy()
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", RestartCount: 1}}
	if _, err := client.CoreV1().Pods("ns").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Pods("ns").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"add a", "update a Running->Running restarts 1", "delete a Running"}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %q, want %q", i, got[i], want[i])
		}
	}
}
