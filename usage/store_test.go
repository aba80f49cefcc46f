package usage

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logrustest "github.com/sirupsen/logrus/hooks/test"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-safe-scheduler/extender/internal/leaderstore"
)

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

func testStore(client *fake.Clientset, l *Learner, shards int) *Store {
	return NewStore(StoreConfig{Namespace: "kube-system", Object: "usage", Shards: shards, FlushInterval: time.Second,
		LeaseDuration: 15 * time.Second}, client, quietLog(), l)
}

// What one writer stores, a new one (a restart) reads back: the same estimates.
func TestStoreRestart(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	l := testLearner(t, nil)
	fill(l, 200)
	web := webPod("shop", "web", "1", "1Gi")
	for i := range 10 {
		l.Observe(web, 2, 3<<30, t0.Add(time.Hour+time.Duration(i)*time.Minute)) // after fill; 2x cpu; 3 Gi, the peak
	}
	s := testStore(client, l, 4)
	if err := s.TakeOver(ctx); err != nil { // the leader: it writes at once
		t.Fatal(err)
	}
	if err := s.Flush(ctx, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	cms, err := client.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=" + ManagedBy})
	if err != nil || len(cms.Items) != 4 {
		t.Fatalf("%d shards stored (%v), want 4", len(cms.Items), err)
	}
	// Readable with kubectl: the workload's key and its estimate.
	cm, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, ShardName("usage", shardOf("deployment/shop/web", 4)), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var r record
	if err := json.Unmarshal([]byte(cm.Data["deployment.shop.web"]), &r); err != nil {
		t.Fatalf("stored deployment.shop.web %q: %v", cm.Data["deployment.shop.web"], err)
	}
	if !r.Estimate.Trusted || r.Estimate.CPU != bucketStart(bucketOf(2)+1) || r.N != 10 || r.Peak != 3<<30 {
		t.Errorf("stored estimate %+v (n %d, peak %v)", r.Estimate, r.N, r.Peak)
	}

	restarted := testLearner(t, nil)
	if err := testStore(client, restarted, 4).Load(ctx); err != nil {
		t.Fatal(err)
	}
	if restarted.Len() != l.Len() {
		t.Fatalf("read %d workloads, want %d", restarted.Len(), l.Len())
	}
	for _, p := range []*corev1.Pod{web, webPod("ns-3", "workload-3", "1", "1Gi"), webPod("ns-7", "workload-157", "2", "1Gi")} {
		a, b := l.Estimate(p), restarted.Estimate(p)
		if a != b {
			t.Errorf("%s: before the restart %+v, after %+v", p.Name, a, b)
		}
	}
	// The recency order survives: the web workload (observed last) is the most recent.
	if front := restarted.lru.Front().Value.(*state).key; front != "deployment/shop/web" {
		t.Errorf("most recent after the restart: %s", front)
	}
	// Unchanged: no write.
	before, _ := client.CoreV1().ConfigMaps("kube-system").Get(ctx, ShardName("usage", 0), metav1.GetOptions{})
	if err := s.Flush(ctx, t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	after, _ := client.CoreV1().ConfigMaps("kube-system").Get(ctx, ShardName("usage", 0), metav1.GetOptions{})
	if before.ResourceVersion != after.ResourceVersion {
		t.Error("an unchanged learner was written again")
	}
}

// 10,000 workloads fit the default 16 shards, each under a ConfigMap's size.
func TestStoreSizeFor10000(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 10,000 workloads")
	}
	l := testLearner(t, nil)
	fill(l, 10000)
	shards, dropped, _ := l.Shards(16, leaderstore.MaxObjectBytes)
	total, largest := 0, 0
	for _, s := range shards {
		size := 0
		for k, v := range s {
			size += len(k) + len(v)
		}
		total += size
		largest = max(largest, size)
	}
	t.Logf("10,000 workloads: %d bytes stored (%d a workload), largest of 16 shards %d bytes", total, total/10000, largest)
	if dropped != 0 || largest > leaderstore.MaxObjectBytes {
		t.Errorf("dropped %d, largest shard %d bytes", dropped, largest)
	}
}

// A shard over the bound leaves out its least recently observed workloads.
func TestStoreBound(t *testing.T) {
	l := testLearner(t, nil)
	fill(l, 50)
	shards, _, _ := l.Shards(1, 1<<30)
	one := 0
	for k, v := range shards[0] {
		one = max(one, len(k)+len(v))
	}
	bounded, dropped, _ := l.Shards(1, 10*one)
	if n := len(bounded[0]); n < 10 || n+dropped != 50 {
		t.Fatalf("kept %d, dropped %d of 50", n, dropped)
	}
	// The kept ones are the most recently observed: the last filled.
	if _, ok := bounded[0]["deployment.ns-49.workload-49"]; !ok {
		t.Error("the most recent workload was dropped")
	}
	if _, ok := bounded[0]["deployment.ns-0.workload-0"]; ok {
		t.Error("the least recent workload was kept")
	}
}

// Unreadable entries are named and skipped; the rest is read.
func TestMergeBadData(t *testing.T) {
	l := testLearner(t, nil)
	fill(l, 1)
	shards, _, _ := l.Shards(1, 1<<20)
	data := map[string]string{"nodots": "{}", "deployment.ns.bad": "{", "deployment.ns.span": `{"n":1,"cpu":{"lo":200,"w":[1]}}`}
	for k, v := range shards[0] {
		data[k] = v
	}
	fresh := testLearner(t, nil)
	n, err := fresh.Merge(data, false)
	if n != 1 || err == nil {
		t.Fatalf("Merge: %d read, error %v", n, err)
	}
	for _, s := range []string{`"nodots" is not a workload key`, "deployment.ns.bad", "spans buckets 200..200"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
}

func TestDataKey(t *testing.T) {
	for _, key := range []string{"deployment/shop/web", "app/shop/web.v2", "cronjob/a/b"} {
		k, ok := dataKey(key)
		back, ok2 := parseDataKey(k)
		if !ok || !ok2 || back != key {
			t.Errorf("%s -> %q (%v) -> %q (%v)", key, k, ok, back, ok2)
		}
	}
	if _, ok := dataKey(fmt.Sprintf("app/ns/%s", strings.Repeat("x", 260))); ok {
		t.Error("a key too long for a ConfigMap was accepted")
	}
}

// writtenWeb is a writer's learner (at p90) that saw the workload shop/web 10 times, written
// by the leader of its store (2 shards) through client.
func writtenWeb(t *testing.T, client *fake.Clientset) (*Learner, *Store, *corev1.Pod) {
	t.Helper()
	w := testLearner(t, nil)
	web := webPod("shop", "web", "1", "1Gi")
	for i := range 10 {
		w.Observe(web, 2, 1<<30, t0.Add(time.Duration(i)*time.Minute))
	}
	s := testStore(client, w, 2)
	if err := s.TakeOver(t.Context()); err != nil { // the leader: it writes at once
		t.Fatal(err)
	}
	if err := s.Flush(t.Context(), t0); err != nil {
		t.Fatal(err)
	}
	return w, s, web
}

// A reader that estimates at another percentile than the writer's is warned, once: the writer's
// error metric and drift alert then measure estimates placement does not use.
func TestFollowWarnsOfAnotherPercentile(t *testing.T) {
	for _, readerPercentile := range []float64{0.9, 0.95} {
		ctx := t.Context()
		client := fake.NewClientset()
		_, _, web := writtenWeb(t, client) // the writer estimates at 0.9
		r, err := NewFollower(readerPercentile, 100)
		if err != nil {
			t.Fatal(err)
		}
		logger, hook := logrustest.NewNullLogger()
		inf, f := ConfigMapInformer(client, "kube-system")
		if err := Follow(r, inf, "usage", logrus.NewEntry(logger)); err != nil {
			t.Fatal(err)
		}
		f.Start(ctx.Done())
		f.WaitForCacheSync(ctx.Done())
		deadline := time.Now().Add(10 * time.Second)
		for r.Estimate(web).Workload.IsZero() || !r.Estimate(web).Trusted {
			if time.Now().After(deadline) {
				t.Fatal("the reader read nothing")
			}
			time.Sleep(10 * time.Millisecond)
		}
		warned := 0
		for _, e := range hook.AllEntries() {
			if strings.Contains(e.Message, "another percentile") {
				warned++
			}
		}
		if want := map[float64]int{0.9: 0, 0.95: 1}[readerPercentile]; warned != want {
			t.Errorf("reader at %v: %d warnings, want %d", readerPercentile, warned, want)
		}
	}
}

// A reader follows what the writer stores, through an informer.
func TestFollow(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	w, s, web := writtenWeb(t, client)
	r := testLearner(t, nil)
	inf, f := ConfigMapInformer(client, "kube-system")
	if err := Follow(r, inf, "usage", quietLog()); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	deadline := time.Now().Add(10 * time.Second)
	for r.Estimate(web) != w.Estimate(web) {
		if time.Now().After(deadline) {
			t.Fatalf("reader %+v, writer %+v", r.Estimate(web), w.Estimate(web))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !r.Estimate(web).Trusted {
		t.Error("the reader's estimate is not trusted")
	}
	// An update replaces the reader's view: 3x now.
	for i := range 200 {
		w.Observe(web, 3, 1<<30, t0.Add(time.Duration(10+i)*time.Minute))
	}
	if err := s.Flush(ctx, t0); err != nil {
		t.Fatal(err)
	}
	for r.Estimate(web) != w.Estimate(web) {
		if time.Now().After(deadline) {
			t.Fatalf("after an update: reader %+v, writer %+v", r.Estimate(web), w.Estimate(web))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
