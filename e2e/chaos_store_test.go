package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// The stores' writers killed mid-write (issue 38): the usage learner's ConfigMaps (the node
// annotator with USAGE_LEARNER on, both modes) and the reward table's ConfigMap (plugin mode:
// the replica holding the reward Lease). The test watches the stores' ConfigMaps as the API
// server serves them, kills the writer with SIGKILL as soon as a write is seen to begin (the
// first object of a flush), restarts it, and checks from the watch: every version whole and
// parseable; what the killed writer left at most one flush behind its last one; the new
// writer's first write of each object holding every row the killed writer had stored, none
// older.

// storeRow is one row of a store as written: the observations and the time of the latest.
type storeRow struct {
	n int
	t time.Time
}

// storeVersion is one version of one of a store's ConfigMaps.
type storeVersion struct {
	at              time.Time
	name            string
	writer, written string
	rows            map[string]storeRow
}

// storeWatch records every version of a store's ConfigMaps.
type storeWatch struct {
	kind     string // "usage" or "reward"
	selector string
	objects  []string // every object a flush writes, in the order it writes them
	parse    func(cm *corev1.ConfigMap) (map[string]storeRow, error)

	mu       sync.Mutex
	versions []storeVersion
	bad      []string // versions that were not whole
	seen     chan string
}

func newUsageWatch(object string, shards int) *storeWatch {
	w := &storeWatch{kind: "usage", selector: "app.kubernetes.io/managed-by=kube-safe-scheduler-usage-learner", seen: make(chan string, 1024),
		parse: func(cm *corev1.ConfigMap) (map[string]storeRow, error) {
			rows := map[string]storeRow{}
			for k, v := range cm.Data {
				var r struct {
					N    int   `json:"n"`
					Last int64 `json:"last"`
				}
				if err := json.Unmarshal([]byte(v), &r); err != nil {
					return nil, fmt.Errorf("%s: %w", k, err)
				}
				if r.N <= 0 || r.Last <= 0 {
					return nil, fmt.Errorf("%s: %d observations, last at %d", k, r.N, r.Last)
				}
				rows[k] = storeRow{n: r.N, t: time.Unix(r.Last, 0)}
			}
			return rows, nil
		}}
	for i := range shards {
		w.objects = append(w.objects, fmt.Sprintf("%s-%d", object, i))
	}
	return w
}

func newRewardWatch() *storeWatch {
	return &storeWatch{kind: "reward", selector: "app.kubernetes.io/managed-by=kube-safe-scheduler-extender-reward", seen: make(chan string, 1024),
		objects: []string{rewardObject},
		parse: func(cm *corev1.ConfigMap) (map[string]storeRow, error) {
			var st struct {
				Version int `json:"version"`
				Rows    []struct {
					Type string    `json:"type"`
					Node string    `json:"node"`
					N    int       `json:"n"`
					T    time.Time `json:"t"`
				} `json:"rows"`
			}
			data, ok := cm.Data["table.json"]
			if !ok {
				return nil, fmt.Errorf("no table.json")
			}
			if err := json.Unmarshal([]byte(data), &st); err != nil {
				return nil, err
			}
			if st.Version != 1 {
				return nil, fmt.Errorf("version %d", st.Version)
			}
			rows := map[string]storeRow{}
			for _, r := range st.Rows {
				rows[r.Type+"/"+r.Node] = storeRow{n: r.N, t: r.T}
			}
			return rows, nil
		}}
}

// run records every version until ctx ends: a list, then a watch from it, again after any error.
func (w *storeWatch) run(ctx context.Context, c *harness.Cluster) {
	record := func(cm *corev1.ConfigMap, at time.Time) {
		v := storeVersion{at: at, name: cm.Name, writer: cm.Annotations[w.kind+".kube-safe-scheduler.io/writer"],
			written: cm.Annotations[w.kind+".kube-safe-scheduler.io/written-at"]}
		if v.writer == "" && len(cm.Data) == 0 {
			return // created empty by the shipped file (the chart), before any write
		}
		rows, err := w.parse(cm)
		if _, terr := time.Parse(time.RFC3339Nano, v.written); err == nil && terr != nil {
			err = fmt.Errorf("written-at %q: %w", v.written, terr)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if err != nil {
			w.bad = append(w.bad, fmt.Sprintf("%s resourceVersion %s: %v", cm.Name, cm.ResourceVersion, err))
			return
		}
		v.rows = rows
		w.versions = append(w.versions, v)
		select {
		case w.seen <- cm.Name:
		default:
		}
	}
	opts := metav1.ListOptions{LabelSelector: w.selector}
	for ctx.Err() == nil {
		list, err := c.Client.CoreV1().ConfigMaps("kube-system").List(ctx, opts)
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		now := time.Now()
		for i := range list.Items {
			record(&list.Items[i], now)
		}
		wopts := opts
		wopts.ResourceVersion = list.ResourceVersion
		wi, err := c.Client.CoreV1().ConfigMaps("kube-system").Watch(ctx, wopts)
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for ev := range wi.ResultChan() {
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				record(cm, time.Now())
			}
		}
		wi.Stop()
	}
}

// latest returns each object's latest version seen (by writer, when writer is not "").
func (w *storeWatch) latest(writer string) map[string]storeVersion {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]storeVersion{}
	for _, v := range w.versions {
		if writer == "" || v.writer == writer {
			out[v.name] = v
		}
	}
	return out
}

// firstOther returns each object's first version written by anyone but writer after since.
func (w *storeWatch) firstOther(writer string, since time.Time) map[string]storeVersion {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]storeVersion{}
	for _, v := range w.versions {
		if _, ok := out[v.name]; !ok && v.writer != writer && v.at.After(since) {
			out[v.name] = v
		}
	}
	return out
}

// flushes returns the distinct written-at stamps writer wrote, in order.
func (w *storeWatch) flushes(writer string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, v := range w.versions {
		if v.writer == writer && !slices.Contains(out, v.written) {
			out = append(out, v.written)
		}
	}
	// By time: RFC 3339 with trailing zeros trimmed does not sort as text.
	at := func(s string) time.Time { ts, _ := time.Parse(time.RFC3339Nano, s); return ts }
	sort.Slice(out, func(i, j int) bool { return at(out[i]).Before(at(out[j])) })
	return out
}

// killWriter waits for the writer's next flush to begin (its first object's write seen by the
// watch), kills it with kill (which returns at the kill), restarts it with restart (after a
// container's restart delay), and waits until another writer has written every object. It
// returns the fault; the recovery is the restart (restarted returns when the process is up);
// the note gives what the checks found. Failures are reported on t.
func (m *chaosMode) killWriter(t *testing.T, w *storeWatch, name string, writer func() string, kill, restart func()) fault {
	t.Helper()
	killed := writer()
	if killed == "" {
		t.Fatalf("%s: no writer holds the store", name)
	}
	// Drain, then wait for the writer's next write of its first object: the flush begins.
	for len(w.seen) > 0 {
		<-w.seen
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var obj string
		select {
		case obj = <-w.seen:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("%s: the writer %s wrote nothing within 2 minutes", name, killed)
		}
		if obj == w.objects[0] && w.latest("")[obj].writer == killed {
			break
		}
	}
	f := fault{name: name, start: time.Now()}
	kill()
	time.Sleep(2 * time.Second) // the kubelet's restart delay, shortened: the Lease decides the rest
	restart()
	f.recovered = time.Now()

	// The new writer: another identity (a restarted process has a new one) writes every object,
	// once the killed writer's Lease has expired (it could not release it).
	var first map[string]storeVersion
	wrote := waitFor(t, name+": every object written by a new writer", 3*time.Minute, func() bool {
		first = w.firstOther(killed, f.start)
		return len(first) == len(w.objects)
	})
	last := w.latest(killed)
	flushes := w.flushes(killed)

	// What the killed writer left: each object at its last flush or the one before (a flush
	// writes the objects in turn; a kill between two leaves the rest one flush behind).
	var behind []string
	newest := ""
	if len(flushes) > 0 {
		newest = flushes[len(flushes)-1]
	}
	var previous string
	if i := slices.Index(flushes, newest); i > 0 {
		previous = flushes[i-1]
	}
	for _, o := range w.objects {
		v, ok := last[o]
		switch {
		case !ok:
			// Never written by the killed writer: the new one's first write carries it on.
		case v.written == newest:
		case v.written == previous:
			behind = append(behind, o)
		default:
			t.Errorf("%s: %s was left at the flush of %s, more than one flush behind the killed writer's last (%s)", name, o, v.written, newest)
		}
	}
	// The new writer carries on from it: every row the killed writer stored, with no fewer
	// observations and none older.
	carried, lost := 0, []string{}
	for o, v := range last {
		after := first[o].rows
		for k, r := range v.rows {
			a, ok := after[k]
			if !ok || a.n < r.n || a.t.Before(r.t) {
				lost = append(lost, fmt.Sprintf("%s %s: %d at %s, then %d at %s", o, k, r.n, r.t.Format(time.RFC3339), a.n, a.t.Format(time.RFC3339)))
				continue
			}
			carried++
		}
	}
	if len(lost) > 0 {
		t.Errorf("%s: the new writer's first write lost what the killed writer had stored (%d rows): %s", name, len(lost), strings.Join(lost[:min(len(lost), 5)], "; "))
	}
	f.note = fmt.Sprintf("killed %.0f ms after the flush began, %d of %d objects written in it; new writer wrote all %.1fs after the kill, carrying %d rows, %d lost",
		float64(f.start.Sub(w.flushStart(killed, newest)).Milliseconds()), len(w.objects)-len(behind), len(w.objects), wrote.Sub(f.start).Seconds(), carried, len(lost))
	if len(last) == 0 {
		f.note = "the killed writer had written nothing"
	}
	return f
}

// flushStart is when the watch saw writer's first object of the flush stamped written.
func (w *storeWatch) flushStart(writer, written string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.versions {
		if v.writer == writer && v.written == written {
			return v.at
		}
	}
	return time.Time{}
}

// check reports every version that was not whole, and returns the figures for the table.
func (w *storeWatch) check(t *testing.T, mode string) string {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.bad) > 0 {
		t.Errorf("%s: %s store: versions not whole: %v", mode, w.kind, w.bad[:min(len(w.bad), 5)])
	}
	writers := map[string]bool{}
	for _, v := range w.versions {
		writers[v.writer] = true
	}
	return fmt.Sprintf("%s store: %d versions, all whole: %v, %d writers", w.kind, len(w.versions), len(w.bad) == 0, len(slices.Collect(maps.Keys(writers))))
}

// chaosUsageShards is USAGE_STORE_SHARDS in the run: a flush writes that many ConfigMaps in
// turn, so a kill can land between two of them.
const chaosUsageShards = 4

// leaseHolder returns the holder of Lease kube-system/name ("" when unknown).
func leaseHolder(ctx context.Context, c *harness.Cluster, name string) string {
	l, err := c.Client.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// killUsageWriter SIGKILLs the node annotator (the usage learner's writer) as a flush of its
// store begins, and restarts it.
func (m *chaosMode) killUsageWriter(t *testing.T, ctx context.Context) fault {
	t.Helper()
	return m.killWriter(t, m.usage, "usage store writer SIGKILLed mid-write",
		func() string { return leaseHolder(ctx, m.c, "usage-learner") },
		m.annotator.Kill,
		func() {
			m.annotator = startAnnotator(t, m.c, m.annotatorEnv)
			m.writeTargets(t)
		})
}

// killRewardWriter SIGKILLs the scheduler replica holding the reward Lease as a write of the
// table begins, and restarts it as standby. When that replica was also the one scheduling, the
// recovery is when the other acquired the scheduler's Lease (the Lease's own acquireTime), as
// for the leader's kill.
func (m *chaosMode) killRewardWriter(t *testing.T, ctx context.Context) fault {
	t.Helper()
	// The holder may have exited on its own (a replica that cannot renew the scheduler's Lease
	// in time on an overloaded API server exits): restart it as the kubelet would and wait for
	// a running replica to hold the reward Lease.
	i := -1
	waitFor(t, "a running replica holding the reward Lease", 2*time.Minute, func() bool {
		m.ensureReplicas(t)
		id := leaseHolder(ctx, m.c, rewardObject)
		i = slices.IndexFunc(m.replicas, func(s *harness.Scheduler) bool {
			return !s.Exited() && rewardIdentity(t, s.Process, time.Minute) == id
		})
		return i >= 0
	})
	wasLeader := m.leader(t) == m.replicas[i]
	oldHolder := m.holder(ctx)
	f := m.killWriter(t, m.reward, "reward store writer SIGKILLed mid-write",
		func() string { return leaseHolder(ctx, m.c, rewardObject) },
		m.replicas[i].Kill,
		func() {
			m.restarts++
			m.replicas[i] = m.startReplica(t, fmt.Sprintf("%s replica %d restart %d", m.name, i, m.restarts))
			m.writeTargets(t)
		})
	if wasLeader {
		acquired := waitFor(t, "a new scheduler Lease holder", time.Minute, func() bool { h := m.holder(ctx); return h != "" && h != oldHolder })
		if l, err := m.c.Client.CoordinationV1().Leases("kube-system").Get(ctx, m.lease, metav1.GetOptions{}); err == nil && l.Spec.AcquireTime != nil {
			acquired = l.Spec.AcquireTime.Time
		}
		f.recovered = later(f.recovered, acquired)
		f.note += fmt.Sprintf("; the writer was also scheduling: the other replica took the scheduler's Lease %.1fs after the kill", acquired.Sub(f.start).Seconds())
	}
	return f
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
