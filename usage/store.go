package usage

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-safe-scheduler/extender/internal/leaderstore"
)

// Labels and annotations of the learner's ConfigMaps.
const (
	// ManagedBy is the app.kubernetes.io/managed-by label of every shard: kubectl get cm -l
	// app.kubernetes.io/managed-by=kube-safe-scheduler-usage-learner lists them.
	ManagedBy        = "kube-safe-scheduler-usage-learner"
	ShardLabel       = "usage.kube-safe-scheduler.io/shard"
	annotationPrefix = "usage.kube-safe-scheduler.io/" // writer, written-at
	droppedAnnotaton = annotationPrefix + "dropped"
)

// StoreConfig places the learner's ConfigMaps: Shards of them named Object-0, Object-1, ...
// in Namespace, and the Lease named Object electing their writer.
type StoreConfig struct {
	Namespace     string
	Object        string
	Shards        int
	FlushInterval time.Duration
	LeaseDuration time.Duration
}

// Store keeps a Learner in ConfigMaps: the replica holding the Lease writes every flush
// interval when the learner changed; it merges what is stored when it starts and when it takes
// over (leaderstore.Store does the election, load, flush and run; shards is the encoding).
type Store struct {
	*leaderstore.Store
	cfg    StoreConfig
	shards *shards
}

// NewStore returns the store of l.
func NewStore(cfg StoreConfig, client kubernetes.Interface, log *logrus.Entry, l *Learner) *Store {
	objects := make([]string, cfg.Shards)
	for i := range objects {
		objects[i] = ShardName(cfg.Object, i)
	}
	sh := &shards{learner: l, n: cfg.Shards, log: log}
	s := leaderstore.New(leaderstore.Config{Client: client, Namespace: cfg.Namespace, Lease: cfg.Object, Objects: objects,
		Component: "usage-learner", What: "the usage store", ManagedBy: ManagedBy, AnnotationPrefix: annotationPrefix,
		SkipUnreadable: true, // a bad entry is skipped, not fatal: the others are read
		FlushInterval:  cfg.FlushInterval, LeaseDuration: cfg.LeaseDuration, Log: log}, sh)
	cfg.Namespace = s.Namespace()
	return &Store{Store: s, cfg: cfg, shards: sh}
}

// ShardName is the ConfigMap holding shard i.
func ShardName(object string, i int) string { return object + "-" + strconv.Itoa(i) }

// Run runs the leader election and, every flush interval, the leader's write (or a follower's
// read of what the leader wrote) until ctx is done.
func (s *Store) Run(ctx context.Context) { s.Store.Run(ctx, leaderstore.Hooks{}) }

// dropped is the workloads the last write left out (shards over the size bound).
func (s *Store) dropped() int64 { return s.shards.dropped.Load() }

// shards is the learner as its ConfigMaps hold it: each workload under its data key, spread
// over the shards by key, the least recently observed left out past the size bound.
type shards struct {
	learner *Learner
	n       int
	log     *logrus.Entry
	// dropped is the workloads the last snapshot left out.
	dropped atomic.Int64
	// warned is the learner's change count when the last warning of dropped workloads was
	// logged (the flush loop calls Snapshot every tick; a state is warned of once).
	warned uint64
}

var _ leaderstore.State = (*shards)(nil)

// Merge implements leaderstore.State.
func (s *shards) Merge(_ int, cm *corev1.ConfigMap) error {
	_, err := s.learner.Merge(cm.Data, false)
	return err
}

// Snapshot implements leaderstore.State.
func (s *shards) Snapshot(time.Time) ([]map[string]string, uint64, error) {
	data, dropped, changes := s.learner.Shards(s.n, leaderstore.MaxObjectBytes)
	s.dropped.Store(int64(dropped))
	if dropped > 0 && changes != s.warned {
		s.warned = changes
		s.log.WithField("dropped", dropped).Warn("workloads left out of the store: raise USAGE_STORE_SHARDS or lower USAGE_MAX_WORKLOADS")
	}
	return data, changes, nil
}

// Stamp implements leaderstore.State: the shard's label and the workloads left out.
func (s *shards) Stamp(i int, cm *corev1.ConfigMap) {
	cm.Annotations[droppedAnnotaton] = strconv.FormatInt(s.dropped.Load(), 10)
	cm.Labels[ShardLabel] = strconv.Itoa(i)
}
