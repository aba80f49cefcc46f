package reward

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-safe-scheduler/extender/internal/leaderstore"
)

// The ConfigMap holding the table: its data key, and annotations naming the replica that wrote
// it last and when.
const (
	dataKey          = "table.json"
	writerAnnotation = "reward.kube-safe-scheduler.io/writer"
	writtenAnnotaton = "reward.kube-safe-scheduler.io/written-at"
)

// maxStoredBytes keeps the ConfigMap under the API server's 1 MiB object limit, with room for
// its metadata.
const maxStoredBytes = leaderstore.MaxObjectBytes

// store keeps the table in a ConfigMap: the replica holding the Lease writes it every flush
// interval when it has learnt something; the others merge it in at the same pace.
type store struct {
	client    kubernetes.Interface
	log       *logrus.Entry
	table     *table
	namespace string
	name      string
	identity  string
	interval  time.Duration
	lease     time.Duration

	// elected: this replica holds the Lease; leader: and it has merged the stored table since,
	// so it may write (a leader that could not read the table must not overwrite it).
	elected, leader atomic.Bool
	// takeover: the leader writes once on taking over even with nothing new, so that the
	// ConfigMap exists and names it.
	takeover atomic.Bool
	// written is the table's change count at the last successful write (flush loop only).
	written uint64
	// metrics, when registered (metrics.go).
	metrics metricsPtr
}

func newStore(cfg Config, client kubernetes.Interface, log *logrus.Entry, t *table) *store {
	return &store{
		client: client, log: log, table: t, namespace: leaderstore.Namespace(cfg.Namespace), name: cfg.Object,
		identity: leaderstore.Identity(), interval: cfg.FlushInterval.D(), lease: cfg.LeaseDuration.D(),
	}
}

// load merges the stored table in; a missing ConfigMap is an empty table.
func (s *store) load(ctx context.Context) error {
	cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ConfigMap %s/%s: %w", s.namespace, s.name, err)
	}
	data, ok := cm.Data[dataKey]
	if !ok {
		return nil
	}
	n, err := s.table.merge([]byte(data))
	if err != nil {
		return fmt.Errorf("ConfigMap %s/%s: %w", s.namespace, s.name, err)
	}
	if n > 0 && s.log.Logger.IsLevelEnabled(logrus.DebugLevel) {
		s.log.WithFields(logrus.Fields{"rows": n, "writer": cm.Annotations[writerAnnotation]}).Debug("table merged from its ConfigMap")
	}
	return nil
}

// flush writes the table when it changed since the last write (or was never written by this
// replica), with optimistic concurrency: the update carries the resourceVersion read, and a
// conflict (another writer in between, as during a leader change) reads again and retries.
func (s *store) flush(ctx context.Context, now time.Time) error {
	data, changed, err := s.table.snapshot(now)
	if err != nil {
		return err
	}
	if !s.takeover.Swap(false) && changed == s.written {
		return nil
	}
	if len(data) > maxStoredBytes {
		s.takeover.Store(true)
		return fmt.Errorf("the table is %d bytes, more than a ConfigMap holds (%d): lower REWARD_MAX_ENTRIES (%d rows now)",
			len(data), maxStoredBytes, s.table.len())
	}
	err = leaderstore.Write(ctx, s.client, s.namespace, s.name, func(cm *corev1.ConfigMap) { s.stamp(cm, data, now) })
	if err != nil {
		s.takeover.Store(true) // try again next time, changed or not
		return fmt.Errorf("writing ConfigMap %s/%s: %w", s.namespace, s.name, err)
	}
	s.written = changed
	return nil
}

func (s *store) stamp(cm *corev1.ConfigMap, data []byte, now time.Time) {
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[writerAnnotation] = s.identity
	cm.Annotations[writtenAnnotaton] = now.UTC().Format(time.RFC3339Nano)
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels["app.kubernetes.io/managed-by"] = "kube-safe-scheduler-extender-reward"
	cm.Data = map[string]string{dataKey: string(data)}
}

// elect runs the leader election on the Lease named like the ConfigMap until ctx is done. The
// leader first merges the stored table (what the previous leader wrote that this replica did
// not see), then writes from the next tick on.
func (s *store) elect(ctx context.Context) {
	e := leaderstore.Election{Client: s.client, Namespace: s.namespace, Name: s.name, Component: "reward",
		Identity: s.identity, Lease: s.lease, Log: s.log}
	e.Run(ctx, func(ctx context.Context) {
		s.elected.Store(true)
		if err := s.takeOver(ctx); err != nil {
			s.log.WithError(err).Warn("elected, but cannot merge the stored table yet: not writing until it can")
		}
	}, func() {
		s.elected.Store(false)
		s.leader.Store(false)
		s.log.WithField("identity", s.identity).Info("no longer writing the reward table")
	})
}

// takeOver merges the stored table (what the previous leader wrote that this replica did not
// learn), then lets this replica write, at once on the next tick.
func (s *store) takeOver(ctx context.Context) error {
	if err := s.load(ctx); err != nil {
		return err
	}
	s.takeover.Store(true)
	if !s.leader.Swap(true) {
		s.log.WithField("identity", s.identity).Info("writing the reward table (leader)")
	}
	return nil
}

// Start implements framework.Starter: it loads the stored table, subscribes to pod changes and
// runs the leader election and the flush loop until ctx is done. Without cluster access it
// does nothing.
func (a *Agent) Start(ctx context.Context) error {
	if a.store == nil {
		return nil
	}
	loadCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := a.store.load(loadCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("%w (the extender's service account needs get and update on the ConfigMap and the Lease %s in %s, and create on them unless they exist: the chart creates them)", err, a.store.name, a.store.namespace)
	}
	a.mu.Lock()
	a.since = a.table.since()
	a.mu.Unlock()
	if _, err := a.pods.AddEventHandler(podEvents(a.onPod)); err != nil {
		return fmt.Errorf("subscribing to pod changes: %w", err)
	}
	if err := a.watchTerminated(ctx.Done()); err != nil {
		return err
	}
	go a.store.elect(ctx)
	go a.loop(ctx)
	a.log.WithFields(logrus.Fields{"configmap": a.store.namespace + "/" + a.store.name, "identity": a.store.identity,
		"observedUntil": a.since}).Info("reward table loaded; learning from pod outcomes")
	return nil
}

// loop, every flush interval: observes the pods past the start timeout, then the leader writes
// the table and the others merge the stored one in.
func (a *Agent) loop(ctx context.Context) {
	t := time.NewTicker(a.store.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.sweep()
		var err error
		switch {
		case a.store.elected.Load() && a.store.leader.Load():
			err = a.store.flush(ctx, a.now())
		case a.store.elected.Load():
			err = a.store.takeOver(ctx)
		default:
			a.store.leader.Store(false) // deposed while taking over
			err = a.store.load(ctx)
		}
		if ctx.Err() == nil {
			a.store.tick(err, a.now())
		}
		if err != nil && ctx.Err() == nil {
			a.log.WithError(err).Warn("reward table")
		}
	}
}
