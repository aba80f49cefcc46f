package main

import (
	"context"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-safe-scheduler/extender/nodestats"
)

// TestRewriteNodes: the rewriter goes round the nodes in order, writes each node's own
// statistics with a new timestamp and keeps its other annotations.
func TestRewriteNodes(t *testing.T) {
	const nodes = 3
	created := time.Now().Add(-time.Hour)
	var objs []corev1.Node
	client := fake.NewClientset()
	for i := range nodes {
		a := nodeStatistics(i, created)
		a["congestion-factor"] = "7"
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i), Annotations: a}}
		objs = append(objs, n)
		if _, err := client.CoreV1().Nodes().Create(context.Background(), &n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	wait := rewriteNodes(context.Background(), client, nodes, 200)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if patches := countPatches(client); patches >= nodes+1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	made, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	if made < nodes+1 || made != countPatches(client) {
		t.Fatalf("made %d rewrites, the API saw %d patches; want the same, at least %d (round the nodes and again)", made, countPatches(client), nodes+1)
	}
	var order []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" {
			order = append(order, a.(interface{ GetName() string }).GetName())
		}
	}
	for i, name := range order {
		if want := nodeName(i % nodes); name != want {
			t.Fatalf("patch %d was of %s, want %s (in order, round again): %v", i, name, want, order)
		}
	}
	for i, before := range objs {
		after, err := client.CoreV1().Nodes().Get(context.Background(), before.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		at, err := nodestats.ParseTimestamp(after.Annotations[nodestats.StatisticsTimestamp])
		if err != nil || !at.After(created) {
			t.Errorf("%s: statistics-timestamp %q (%v), want a time after the creation's %v", before.Name, after.Annotations[nodestats.StatisticsTimestamp], err, created)
		}
		want := nodeStatistics(i, at)
		want["congestion-factor"] = "7"
		if !maps.Equal(after.Annotations, want) {
			t.Errorf("%s: annotations %v, want %v", before.Name, after.Annotations, want)
		}
	}
}

func countPatches(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "patch" {
			n++
		}
	}
	return n
}
