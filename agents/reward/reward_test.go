package reward

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings/settingstest"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// clock is an injected clock tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// fakeCluster gives the agent an informer factory over the fake clientset, never started: the
// test plays the pod informer, calling the agent's handler (podEvents) one change at a time.
type fakeCluster struct {
	a *Agent
}

func (f *fakeCluster) fn(old, new *corev1.Pod) {
	h := podEvents(f.a.onPod)
	switch {
	case old == nil:
		h.OnAdd(new, false)
	case new == nil:
		h.OnDelete(cache.DeletedFinalStateUnknown{Key: old.Namespace + "/" + old.Name, Obj: old})
	default:
		h.OnUpdate(old, new)
	}
}

// newAgent returns an agent over a fake clientset holding objs, its clock at t0, started (table
// loaded, subscribed) with ctx.
func newAgent(t *testing.T, env map[string]string, client *fake.Clientset) (*Agent, *fakeCluster, *clock) {
	t.Helper()
	cfg, err := settingstest.Bind(DefaultConfig(), env)
	if err != nil {
		t.Fatal(err)
	}
	h := framework.NewHandle(nil)
	h.Informers, h.Client = informers.NewSharedInformerFactory(client, 0), client
	h.PodEvents = h.Informers.Core().V1().Pods().Informer()
	a, err := New(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: t0}
	a.now = c.now
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return a, &fakeCluster{a: a}, c
}

type podOpt func(*corev1.Pod)

func pod(name, typ, node string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"podtype": typ}},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func running(ready bool, at time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		s := corev1.ConditionFalse
		if ready {
			s = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: s, LastTransitionTime: metav1.NewTime(at)}}
	}
}

func restarted(count int32, ran time.Duration, finished time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: count,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				StartedAt: metav1.NewTime(finished.Add(-ran)), FinishedAt: metav1.NewTime(finished)}}}}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestPodType(t *testing.T) {
	yes := true
	rs := []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-5d8f", Controller: &yes}}
	for _, c := range []struct {
		labels map[string]string
		owners []metav1.OwnerReference
		want   string
	}{
		{map[string]string{"podtype": "a", "app": "b", "name": "c"}, nil, "a"},
		{map[string]string{"app": "b", "name": "c"}, nil, "b"},
		{map[string]string{"name": "c"}, nil, "c"},
		{nil, nil, "pod-name"},
		// A pod with a controller: its workload (package workload), unless podtype says otherwise.
		{map[string]string{"app": "b", "pod-template-hash": "5d8f"}, rs, "deployment/shop/web"},
		{nil, rs, "replicaset/shop/web-5d8f"},
		{map[string]string{"podtype": "a", "pod-template-hash": "5d8f"}, rs, "a"},
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "pod-name", Labels: c.labels, OwnerReferences: c.owners}}
		if got := PodType(p); got != c.want {
			t.Errorf("PodType(%v, %v) = %q, want %q", c.labels, c.owners, got, c.want)
		}
	}
}

func TestModel(t *testing.T) {
	m := model{weight: 0.1, initial: 1, halfLife: 24 * time.Hour, minObservations: 4}
	e := m.observe(entry{}, false, 0, t0)
	// 0.9 * 1 + 0.1 * 0 = 0.9
	if !near(e.R, 0.9) || e.N != 1 {
		t.Errorf("one failure: %+v, want R 0.9, N 1", e)
	}
	e = m.observe(e, true, 0.5, t0)
	// 0.9 * 0.9 + 0.1 * 0.5 = 0.86
	if !near(e.R, 0.86) || e.N != 2 {
		t.Errorf("then a long restart: %+v, want R 0.86", e)
	}
	// One half-life later the distance to 1 halves: 1 - 0.14/2 = 0.93.
	if got := m.decayed(e, t0.Add(24*time.Hour)); !near(got, 0.93) {
		t.Errorf("decayed after a half-life: %v, want 0.93", got)
	}
	if got := (model{weight: 0.1, initial: 1}).decayed(e, t0.Add(1000*time.Hour)); !near(got, 0.86) {
		t.Errorf("half-life 0 must not drift: %v", got)
	}
	// n = 1 of k = 4: (1 * 0.5 + 3 * 0.9) / 4 = 0.8
	if got := m.blend(1, 0.5, 0.9); !near(got, 0.8) {
		t.Errorf("blend: %v, want 0.8", got)
	}
	if got := m.blend(4, 0.5, 0.9); got != 0.5 {
		t.Errorf("blend at k: %v, want 0.5", got)
	}
	for r, want := range map[float64]int64{1: 10, 0.729: 7, 0.75: 8, 0: 0, -1: 0, 2: 10} {
		if got := score(r); got != want {
			t.Errorf("score(%v) = %d, want %d", r, got, want)
		}
	}
}

// Status updates that repeat the same state do not move the reward; each transition counts once.
func TestRepeatedStatusCountsOnce(t *testing.T) {
	a, fc, c := newAgent(t, nil, fake.NewClientset())
	p := pod("a", "web", "n1")
	fc.fn(nil, p)
	failing := pod("a", "web", "n1", running(true, t0), restarted(1, time.Second, t0))
	for range 5 { // the kubelet reports the same state again and again
		c.advance(time.Second)
		fc.fn(p, failing)
	}
	e, _ := a.table.get("web", "n1")
	// Ready once (1: r = 0.9*1 + 0.1*1 = 1), then one quick restart (0: r = 0.9*1 + 0.1*0 = 0.9).
	if e.N != 2 || !near(e.R, 0.9) {
		t.Errorf("after five identical updates: %+v, want N 2, R 0.9", e)
	}
}

// A restart after running less than the MTTF counts 0, after at least the MTTF 0.5.
func TestRestartWithinAndAfterMTTF(t *testing.T) {
	for _, c := range []struct {
		ran  time.Duration
		want float64
	}{
		{599 * time.Second, 0.9},  // 0.9*1 + 0.1*0
		{600 * time.Second, 0.95}, // 0.9*1 + 0.1*0.5
		{2 * time.Hour, 0.95},
	} {
		t.Run(c.ran.String(), func(t *testing.T) {
			a, fc, clk := newAgent(t, map[string]string{"REWARD_HALF_LIFE": "0"}, fake.NewClientset())
			p := pod("a", "batch", "n1", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning })
			fc.fn(nil, p)
			clk.advance(c.ran)
			fc.fn(p, pod("a", "batch", "n1", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, restarted(1, c.ran, clk.t)))
			e, _ := a.table.get("batch", "n1")
			if e.N != 1 || !near(e.R, c.want) {
				t.Errorf("ran %v: %+v, want N 1, R %v", c.ran, e, c.want)
			}
		})
	}
}

// A pod that leaves the cache without being deleted has terminated: the agent learns its final
// phase (Failed: 0; Succeeded: 1) from the terminated informer, whether its news comes before or
// after the shared informer's; a pod whose phase never comes teaches nothing and is forgotten
// after finalWait, and terminated pods of the initial list the learner never followed are
// ignored. A pod whose phase comes before the shared informer ever brought it is learned once
// that informer's news comes (the two informers are independent).
func TestTerminalPhases(t *testing.T) {
	a, fc, c := newAgent(t, nil, fake.NewClientset())
	phase := func(p *corev1.Pod, ph corev1.PodPhase) *corev1.Pod {
		q := p.DeepCopy()
		q.Status.Phase = ph
		return q
	}
	f, s, gone := pod("f", "spark", "n2"), pod("s", "spark", "n2"), pod("gone", "spark", "n2")
	for _, p := range []*corev1.Pod{f, s, gone} {
		fc.fn(nil, p)
	}
	a.onFinal(phase(pod("old", "spark", "n2"), corev1.PodFailed), true) // from the initial list
	fc.fn(f, nil)                                                       // the shared informer first,
	a.onFinal(phase(f, corev1.PodFailed), false)                        // then the phase
	a.onFinal(phase(s, corev1.PodSucceeded), false)                     // the phase first,
	fc.fn(s, nil)                                                       // then the shared informer
	fc.fn(gone, nil)                                                    // no phase ever comes
	e, _ := a.table.get("spark", "n2")
	// Failed: 0.9; Succeeded: 0.9*0.9 + 0.1 = 0.91; "gone" and "old": nothing.
	if e.N != 2 || !near(e.R, 0.91) {
		t.Errorf("spark on n2: %+v, want N 2, R 0.91", e)
	}
	// A pod created and failed at once: the terminated informer's news comes before the shared
	// informer has brought the pod at all; then the addition and the departure come.
	late := pod("late", "spark", "n2")
	a.onFinal(phase(late, corev1.PodFailed), false)
	fc.fn(nil, late)
	fc.fn(late, nil)
	// A third observation, a failure: 0.91*0.9 = 0.819.
	if e, _ := a.table.get("spark", "n2"); e.N != 3 || !near(e.R, 0.819) {
		t.Errorf("spark on n2 after the late pod: %+v, want N 3, R 0.819", e)
	}
	if len(a.finals) != 1 {
		t.Errorf("%d halves waiting, want 1 (gone's)", len(a.finals))
	}
	c.advance(finalWait)
	a.sweep()
	if len(a.finals) != 0 {
		t.Errorf("%d halves waiting after finalWait, want 0", len(a.finals))
	}
}

func TestStartTimeout(t *testing.T) {
	a, fc, c := newAgent(t, map[string]string{"REWARD_START_TIMEOUT": "5m"}, fake.NewClientset())
	fc.fn(nil, pod("stuck", "web", "n1"))
	fc.fn(nil, pod("ok", "web", "n1", running(false, t0)))
	c.advance(4 * time.Minute)
	a.sweep()
	if _, ok := a.table.get("web", "n1"); ok {
		t.Fatal("observed before the timeout")
	}
	c.advance(time.Minute)
	a.sweep()
	a.sweep()
	if e, _ := a.table.get("web", "n1"); e.N != 1 || !near(e.R, 0.9) {
		t.Errorf("after the timeout: %+v, want one 0 (R 0.9)", e)
	}
	// After a restart, a timeout that expired before the stored table was written is not
	// counted again; one that expires later is.
	l := newLearner(time.Minute, 5*time.Minute)
	scheduled := func(name string, at time.Time) *corev1.Pod {
		return pod(name, "web", "n1", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
		})
	}
	since := t0.Add(10 * time.Minute)
	l.update(scheduled("old", t0), since, since)                       // expired at t0+5m
	l.update(scheduled("recent", t0.Add(8*time.Minute)), since, since) // expires at t0+13m
	if got := l.sweep(since, since.Add(3*time.Minute)); len(got) != 1 || got[0].x != 0 {
		t.Errorf("sweep after a restart: %+v, want the recent pod's timeout only", got)
	}
}

func TestScoreAndPreempt(t *testing.T) {
	a, _, c := newAgent(t, map[string]string{"REWARD_PREEMPT_MIN": "0.5", "REWARD_WEIGHT": "0.5"}, fake.NewClientset())
	for range 2 {
		a.table.observe("spark", "bad", 0, c.now())
	}
	nodes := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "bad"}}, {ObjectMeta: metav1.ObjectMeta{Name: "good"}}}
	spark := pod("p", "spark", "")
	got, _ := a.score(context.Background(), spark, nodes)
	// r = 0.5 * 0.5 = 0.25: score round(2.5) = 3.
	if diff := cmp.Diff([]int64{3, 10}, got); diff != "" {
		t.Errorf("spark scores (-want +got):\n%s", diff)
	}
	got, _ = a.score(context.Background(), pod("w", "web", ""), nodes)
	if diff := cmp.Diff([]int64{10, 10}, got); diff != "" {
		t.Errorf("web scores (-want +got):\n%s", diff)
	}
	keep, _ := a.Preempt(context.Background(), spark, []string{"bad", "good"})
	if diff := cmp.Diff([]bool{false, true}, keep); diff != "" {
		t.Errorf("preemption (-want +got):\n%s", diff)
	}
}

// Below REWARD_MIN_OBSERVATIONS a type's reward blends with the node's over every type.
func TestMinObservationsBlend(t *testing.T) {
	a, _, c := newAgent(t, map[string]string{"REWARD_MIN_OBSERVATIONS": "2", "REWARD_HALF_LIFE": "0"}, fake.NewClientset())
	a.table.observe("spark", "n", 0, c.now()) // spark 0.9 (N 1), node 0.9
	a.table.observe("spark", "n", 0, c.now()) // spark 0.81 (N 2), node 0.81
	// web, never seen: (0 * 1 + 2 * 0.81) / 2 = 0.81; spark at k: its own 0.81.
	if got := a.table.reward("web", "n", c.now()); !near(got, 0.81) {
		t.Errorf("web: %v, want 0.81", got)
	}
	a.table.observe("web", "n", 1, c.now()) // web 1 (N 1), node 0.9*0.81 + 0.1 = 0.829
	// (1 * 1 + 1 * 0.829) / 2 = 0.9145
	if got := a.table.reward("web", "n", c.now()); !near(got, 0.9145) {
		t.Errorf("web after one success: %v, want 0.9145", got)
	}
}

// The table written to its ConfigMap reads back the same scores in a new process; rows past
// the limit go least recently observed first.
func TestPersistence(t *testing.T) {
	client := fake.NewClientset()
	env := map[string]string{"REWARD_NAMESPACE": "ns", "REWARD_MAX_ENTRIES": "4"}
	a, _, c := newAgent(t, env, client)
	a.table.observe("spark", "n1", 0, c.now())
	c.advance(time.Minute)
	a.table.observe("web", "n2", 0.5, c.now())
	if err := a.store.TakeOver(context.Background()); err != nil { // the leader: it writes at once
		t.Fatal(err)
	}
	if err := a.store.Flush(context.Background(), c.now()); err != nil {
		t.Fatal(err)
	}
	cm, err := client.CoreV1().ConfigMaps("ns").Get(context.Background(), "reward-table", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Annotations[writerAnnotation] != a.store.Identity() {
		t.Errorf("writer %q, want %q", cm.Annotations[writerAnnotation], a.store.Identity())
	}
	b, _, _ := newAgent(t, env, client)
	for _, k := range []key{{"spark", "n1"}, {"web", "n2"}, {"", "n1"}, {"", "n2"}} {
		if ra, rb := a.table.reward(k.Type, k.Node, c.now()), b.table.reward(k.Type, k.Node, c.now()); ra != rb {
			t.Errorf("%v: %v before, %v after reading back", k, ra, rb)
		}
	}
	if !b.since.Equal(c.now()) {
		t.Errorf("since %v, want the flush time %v", b.since, c.now())
	}
	// A fifth row evicts the oldest: n1's row over every type and spark's on n1 were observed
	// first; ties go by key, "" first.
	c.advance(time.Minute)
	b.table.observe("batch", "n2", 1, c.now())
	if _, ok := b.table.get("", "n1"); ok || len(b.table.rows) != 4 {
		t.Errorf("rows after eviction: %v", b.table.rows)
	}
	// Nothing new: no write.
	rv := cm.ResourceVersion
	if err := a.store.Flush(context.Background(), c.now()); err != nil {
		t.Fatal(err)
	}
	cm, _ = client.CoreV1().ConfigMaps("ns").Get(context.Background(), "reward-table", metav1.GetOptions{})
	if cm.ResourceVersion != rv {
		t.Errorf("a flush with nothing new wrote (resourceVersion %s -> %s)", rv, cm.ResourceVersion)
	}
}

// After a restart, transitions older than the stored table's observedUntil are not counted again.
func TestRestartDoesNotRecount(t *testing.T) {
	client := fake.NewClientset()
	env := map[string]string{"REWARD_NAMESPACE": "ns"}
	a, fc, c := newAgent(t, env, client)
	ready := pod("a", "web", "n1", running(true, t0), restarted(2, time.Second, t0))
	fc.fn(nil, ready)
	c.advance(time.Second)
	if err := a.store.TakeOver(context.Background()); err != nil { // the leader: it writes at once
		t.Fatal(err)
	}
	if err := a.store.Flush(context.Background(), c.now()); err != nil {
		t.Fatal(err)
	}
	before, _ := a.table.get("web", "n1")
	b, fcb, cb := newAgent(t, env, client)
	cb.t = c.t
	fcb.fn(nil, ready) // the informer's initial list
	if after, _ := b.table.get("web", "n1"); after != before {
		t.Errorf("restart recounted: %+v, was %+v", after, before)
	}
	// A restart after the flush counts.
	cb.advance(time.Minute)
	fcb.fn(ready, pod("a", "web", "n1", running(true, t0), restarted(3, time.Second, cb.t)))
	if after, _ := b.table.get("web", "n1"); after.N != before.N+1 {
		t.Errorf("a new restart: N %d, want %d", after.N, before.N+1)
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Weight, cfg.Initial, cfg.MaxEntries, cfg.FlushInterval, cfg.Object = 0, 2, 100000, 0, "Bad_Name"
	err := cfg.Validate()
	for _, want := range []string{"weight", "initial", "maxEntries", "flushInterval", "object"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	if _, err := settingstest.Bind(DefaultConfig(), map[string]string{"REWARD_MTTF": "ten minutes"}); err == nil {
		t.Error("a bad duration was accepted")
	}
	var c Config
	if err := json.Unmarshal([]byte(`{"mttf":"90s","halfLife":"0s","flushInterval":"2s"}`), &c); err != nil || c.MTTF.D() != 90*time.Second || c.FlushInterval.D() != 2*time.Second {
		t.Errorf("JSON durations: %+v, %v", c, err)
	}
	b, _ := json.Marshal(DefaultConfig())
	if !strings.Contains(string(b), `"mttf":"10m"`) {
		t.Errorf("JSON: %s", b)
	}
}

func TestNoClusterAccess(t *testing.T) {
	a, err := New(DefaultConfig(), framework.NewHandle(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _ := a.score(context.Background(), pod("p", "x", ""), []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n"}}})
	if fmt.Sprint(got) != "[10]" {
		t.Errorf("scores %v", got)
	}
	if a.BindFunc() != nil {
		t.Error("binds with BIND off")
	}
}

// A replica elected while the stored table cannot be read does not write (it would overwrite
// what the previous leader wrote) until it has merged it.
func TestTakeOverMergesFirst(t *testing.T) {
	client := fake.NewClientset()
	a, _, c := newAgent(t, map[string]string{"REWARD_NAMESPACE": "ns"}, client)
	broken := true
	client.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if broken {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	a.store.Elected(context.Background())
	if a.store.Leading() {
		t.Fatal("took over without reading the table")
	}
	broken = false
	if err := a.store.Sync(context.Background(), c.now()); err != nil || !a.store.Leading() { // the next tick takes over
		t.Fatalf("err %v, leading %v", err, a.store.Leading())
	}
	if err := a.store.Flush(context.Background(), c.now()); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("ns").Get(context.Background(), "reward-table", metav1.GetOptions{}); err != nil {
		t.Errorf("the new leader did not write: %v", err)
	}
}
