package adapter

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
)

// Events recorded before the scheduler sends its recorder's events are held, then sent in order
// once it does; later ones go straight through.
func TestEventsHeldUntilSending(t *testing.T) {
	fake := events.NewFakeRecorder(10)
	var sending atomic.Bool
	r := newEventRecorder(t.Context(), fake, sending.Load)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	r.Event(pod, corev1.EventTypeWarning, "First", "one")
	r.Event(pod, corev1.EventTypeWarning, "Second", "two")
	select {
	case e := <-fake.Events:
		t.Fatalf("event %q sent before the scheduler sends events", e)
	case <-time.After(300 * time.Millisecond):
	}
	sending.Store(true)
	for _, want := range []string{"Warning First one", "Warning Second two"} {
		select {
		case got := <-fake.Events:
			if got != want {
				t.Errorf("event %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the held event %q was never sent", want)
		}
	}
	r.Event(pod, corev1.EventTypeNormal, "Third", "three")
	if got := <-fake.Events; got != "Normal Third three" {
		t.Errorf("event %q after sending started", got)
	}

	// Held events are dropped when the scheduler stops first.
	ctx, cancel := context.WithCancel(t.Context())
	dropped := newEventRecorder(ctx, fake, func() bool { return false })
	dropped.Event(pod, corev1.EventTypeWarning, "Lost", "never sent")
	cancel()
	select {
	case e := <-fake.Events:
		t.Fatalf("event %q sent after the scheduler stopped", e)
	case <-time.After(300 * time.Millisecond):
	}
}
