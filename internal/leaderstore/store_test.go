package leaderstore

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// counter is a State of one number per ConfigMap under the key "n"; merge keeps the larger.
type counter struct {
	n       []int
	changes uint64
	bad     bool // Merge fails
}

func (c *counter) Merge(i int, cm *corev1.ConfigMap) error {
	if c.bad {
		return errors.New("unreadable")
	}
	v, err := strconv.Atoi(cm.Data["n"])
	if err != nil {
		return err
	}
	c.n[i] = max(c.n[i], v)
	return nil
}

func (c *counter) Snapshot(time.Time) ([]map[string]string, uint64, error) {
	out := make([]map[string]string, len(c.n))
	for i, v := range c.n {
		out[i] = map[string]string{"n": strconv.Itoa(v)}
	}
	return out, c.changes, nil
}

func (c *counter) Stamp(i int, cm *corev1.ConfigMap) { cm.Labels["shard"] = strconv.Itoa(i) }

func testStore(client *fake.Clientset, c *counter, skip bool) *Store {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return New(Config{Client: client, Namespace: "ns", Lease: "obj", Objects: []string{"obj-0", "obj-1"}, Component: "test",
		What: "the counters", ManagedBy: "tester", AnnotationPrefix: "test.io/", SkipUnreadable: skip,
		FlushInterval: time.Second, LeaseDuration: 15 * time.Second, Log: logrus.NewEntry(l)}, c)
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// A leader writes every ConfigMap, stamped, once per change; a new replica reads them back.
func TestStoreFlushLoad(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	c := &counter{n: []int{3, 5}, changes: 1}
	s := testStore(client, c, false)
	if err := s.Sync(ctx, t0); err != nil || s.Leading() { // a follower: reads, does not write
		t.Fatalf("follower: err %v, leading %v", err, s.Leading())
	}
	if l, _ := client.CoreV1().ConfigMaps("ns").List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Fatalf("a follower wrote %d ConfigMaps", len(l.Items))
	}
	s.Elected(ctx)
	if !s.Leading() {
		t.Fatal("not leading once elected")
	}
	if err := s.Sync(ctx, t0); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"3", "5"} {
		cm, err := client.CoreV1().ConfigMaps("ns").Get(ctx, "obj-"+strconv.Itoa(i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data["n"] != want || cm.Labels["app.kubernetes.io/managed-by"] != "tester" || cm.Labels["shard"] != strconv.Itoa(i) ||
			cm.Annotations["test.io/writer"] != s.Identity() || cm.Annotations["test.io/written-at"] != t0.Format(time.RFC3339Nano) {
			t.Errorf("obj-%d: data %v, labels %v, annotations %v", i, cm.Data, cm.Labels, cm.Annotations)
		}
	}
	// Nothing new (the change count did not move): nothing written.
	stored := func() string {
		cm, _ := client.CoreV1().ConfigMaps("ns").Get(ctx, "obj-1", metav1.GetOptions{})
		return cm.Data["n"]
	}
	c.n[1] = 6
	if err := s.Sync(ctx, t0.Add(time.Second)); err != nil || stored() != "5" {
		t.Errorf("an unchanged state was written again (err %v)", err)
	}
	c.n[1], c.changes = 7, 2
	if err := s.Sync(ctx, t0.Add(time.Second)); err != nil || stored() != "7" {
		t.Errorf("a change was not written (err %v)", err)
	}
	// A restart reads back what was written.
	back := &counter{n: []int{0, 0}}
	if err := testStore(client, back, false).Load(ctx); err != nil || back.n[0] != 3 || back.n[1] != 7 {
		t.Errorf("read back %v, %v", back.n, err)
	}
	// Unreadable data fails the load, unless skipped.
	if err := testStore(client, &counter{n: []int{0, 0}, bad: true}, false).Load(ctx); err == nil || !strings.Contains(err.Error(), "ns/obj-0") {
		t.Errorf("unreadable data: %v", err)
	}
	if err := testStore(client, &counter{n: []int{0, 0}, bad: true}, true).Load(ctx); err != nil {
		t.Errorf("unreadable data skipped: %v", err)
	}
}

// A replica elected while the stored state cannot be read does not write (it would overwrite
// what the previous leader wrote) until a later tick has merged it; a failed write is retried
// at the next tick even with nothing new.
func TestStoreTakeOverMergesFirst(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	broken := true
	client.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if broken {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	s := testStore(client, &counter{n: []int{1, 1}}, false)
	s.Elected(ctx)
	if s.Leading() {
		t.Fatal("leading without having read the stored state")
	}
	if err := s.Sync(ctx, t0); err == nil || s.Leading() {
		t.Fatalf("took over without reading: err %v", err)
	}
	broken = false
	if err := s.Sync(ctx, t0); err != nil || !s.Leading() {
		t.Fatalf("err %v, leading %v", err, s.Leading())
	}
	failing := true
	client.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failing {
			return true, nil, errors.New("forbidden")
		}
		return false, nil, nil
	})
	if err := s.Sync(ctx, t0); err == nil || !strings.Contains(err.Error(), "writing ConfigMap ns/obj-0") {
		t.Fatalf("a failed write: %v", err)
	}
	failing = false
	if err := s.Sync(ctx, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("ns").Get(ctx, "obj-1", metav1.GetOptions{}); err != nil {
		t.Errorf("the failed write was not retried: %v", err)
	}
	s.Deposed()
	if s.Leading() {
		t.Error("leading once deposed")
	}
}

// A reader follows what the writer stores, through an informer over the managed-by label.
func TestFollow(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	s := testStore(client, &counter{n: []int{4, 9}}, false)
	s.Elected(ctx)
	if err := s.Flush(ctx, t0); err != nil {
		t.Fatal(err)
	}
	// Not the store's: not followed.
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other"}, Data: map[string]string{"n": "1"}}
	if _, err := client.CoreV1().ConfigMaps("ns").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	inf, f := Informer(client, "ns", "tester")
	if err := Follow(inf, func(cm *corev1.ConfigMap) { got <- cm.Name + "=" + cm.Data["n"] }); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case v := <-got:
			seen[v] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("followed %v", seen)
		}
	}
	if !seen["obj-0=4"] || !seen["obj-1=9"] {
		t.Errorf("followed %v, want obj-0=4 and obj-1=9", seen)
	}
}
