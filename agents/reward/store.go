package reward

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-safe-scheduler/extender/internal/leaderstore"
)

// The ConfigMap holding the table: its data key, and the prefix of the annotations naming the
// replica that wrote it last and when (writer, written-at).
const (
	dataKey          = "table.json"
	annotationPrefix = "reward.kube-safe-scheduler.io/"
	writerAnnotation = annotationPrefix + "writer"
	managedBy        = "kube-safe-scheduler-extender-reward"
)

// maxStoredBytes keeps the ConfigMap under the API server's 1 MiB object limit, with room for
// its metadata.
const maxStoredBytes = leaderstore.MaxObjectBytes

// store keeps the table in one ConfigMap named like its Lease (leaderstore.Store does the
// election, load, flush and run); tableState is the table's encoding.
type store struct {
	*leaderstore.Store
	name     string
	interval time.Duration
	// metrics, when registered (metrics.go).
	metrics metricsPtr
}

func newStore(cfg Config, client kubernetes.Interface, log *logrus.Entry, t *table) *store {
	return &store{
		Store: leaderstore.New(leaderstore.Config{Client: client, Namespace: cfg.Namespace, Lease: cfg.Object,
			Objects: []string{cfg.Object}, Component: "reward", What: "the reward table", ManagedBy: managedBy,
			AnnotationPrefix: annotationPrefix, FlushInterval: cfg.FlushInterval.D(), LeaseDuration: cfg.LeaseDuration.D(),
			Log: log}, tableState{t: t, log: log}),
		name: cfg.Object, interval: cfg.FlushInterval.D(),
	}
}

// tableState is the table as its ConfigMap holds it: JSON under dataKey.
type tableState struct {
	t   *table
	log *logrus.Entry
}

var _ leaderstore.State = tableState{}

// Merge implements leaderstore.State; a ConfigMap without the key is an empty table.
func (s tableState) Merge(_ int, cm *corev1.ConfigMap) error {
	d, ok := cm.Data[dataKey]
	if !ok {
		return nil
	}
	n, err := s.t.merge([]byte(d))
	if err != nil {
		return err
	}
	if n > 0 && s.log.Logger.IsLevelEnabled(logrus.DebugLevel) {
		s.log.WithFields(logrus.Fields{"rows": n, "writer": cm.Annotations[writerAnnotation]}).Debug("table merged from its ConfigMap")
	}
	return nil
}

// Snapshot implements leaderstore.State: a table larger than a ConfigMap holds is an error.
func (s tableState) Snapshot(now time.Time) ([]map[string]string, uint64, error) {
	data, changed, err := s.t.snapshot(now)
	if err != nil {
		return nil, 0, err
	}
	if len(data) > maxStoredBytes {
		return nil, 0, fmt.Errorf("the table is %d bytes, more than a ConfigMap holds (%d): lower REWARD_MAX_ENTRIES (%d rows now)",
			len(data), maxStoredBytes, s.t.len())
	}
	return []map[string]string{{dataKey: string(data)}}, changed, nil
}

// Stamp implements leaderstore.State: the table has no labels of its own.
func (tableState) Stamp(int, *corev1.ConfigMap) {}

// Start implements framework.Starter: it loads the stored table, subscribes to pod changes and
// runs the leader election and the flush loop until ctx is done. Without cluster access it
// does nothing.
func (a *Agent) Start(ctx context.Context) error {
	if a.store == nil {
		return nil
	}
	loadCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := a.store.Load(loadCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("%w (the extender's service account needs get and update on the ConfigMap and the Lease %s in %s, and create on them unless they exist: the chart creates them)", err, a.store.name, a.store.Namespace())
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
	// Every flush interval: observe the pods past the start timeout, then the leader writes the
	// table and the others merge the stored one in.
	go a.store.Run(ctx, leaderstore.Hooks{Before: a.sweep, After: a.store.tick, Now: a.now})
	a.log.WithFields(logrus.Fields{"configmap": a.store.Namespace() + "/" + a.store.name, "identity": a.store.Identity(),
		"observedUntil": a.since}).Info("reward table loaded; learning from pod outcomes")
	return nil
}
