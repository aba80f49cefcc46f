package usage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-safe-scheduler/extender/internal/leaderstore"
)

// Labels and annotations of the learner's ConfigMaps.
const (
	// ManagedBy is the app.kubernetes.io/managed-by label of every shard: kubectl get cm -l
	// app.kubernetes.io/managed-by=kube-safe-scheduler-usage-learner lists them.
	ManagedBy        = "kube-safe-scheduler-usage-learner"
	ShardLabel       = "usage.kube-safe-scheduler.io/shard"
	writerAnnotation = "usage.kube-safe-scheduler.io/writer"
	writtenAnnotaton = "usage.kube-safe-scheduler.io/written-at"
	droppedAnnotaton = "usage.kube-safe-scheduler.io/dropped"
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
// over.
type Store struct {
	cfg      StoreConfig
	client   kubernetes.Interface
	log      *logrus.Entry
	learner  *Learner
	identity string

	// elected: this replica holds the Lease; leader: and it has merged the stored state since,
	// so it may write (a leader that could not read must not overwrite).
	elected, leader atomic.Bool
	// takeover makes the next flush write even with nothing new.
	takeover atomic.Bool
	// written is the learner's change count at the last complete write (flush loop only).
	written uint64
	// Dropped is the workloads the last write left out (shards over the size bound).
	dropped atomic.Int64
}

// NewStore returns the store of l.
func NewStore(cfg StoreConfig, client kubernetes.Interface, log *logrus.Entry, l *Learner) *Store {
	cfg.Namespace = leaderstore.Namespace(cfg.Namespace)
	return &Store{cfg: cfg, client: client, log: log, learner: l, identity: leaderstore.Identity()}
}

// ShardName is the ConfigMap holding shard i.
func ShardName(object string, i int) string { return object + "-" + strconv.Itoa(i) }

// Load merges every stored shard in; missing shards are empty.
func (s *Store) Load(ctx context.Context) error {
	var errs []error
	for i := range s.cfg.Shards {
		name := ShardName(s.cfg.Object, i)
		cm, err := s.client.CoreV1().ConfigMaps(s.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading ConfigMap %s/%s: %w", s.cfg.Namespace, name, err)
		}
		if _, err := s.learner.Merge(cm.Data, false); err != nil {
			// A bad entry is skipped, not fatal: the others are read.
			errs = append(errs, fmt.Errorf("ConfigMap %s/%s: %w", s.cfg.Namespace, name, err))
		}
	}
	if len(errs) > 0 {
		s.log.WithError(errors.Join(errs...)).Warn("some stored workloads were not read")
	}
	return nil
}

// Flush writes every shard when the learner changed since the last write.
func (s *Store) Flush(ctx context.Context, now time.Time) error {
	shards, dropped, changes := s.learner.Shards(s.cfg.Shards, leaderstore.MaxObjectBytes)
	if !s.takeover.Swap(false) && changes == s.written {
		return nil
	}
	s.dropped.Store(int64(dropped))
	if dropped > 0 {
		s.log.WithField("dropped", dropped).Warn("workloads left out of the store: raise USAGE_STORE_SHARDS or lower USAGE_MAX_WORKLOADS")
	}
	for i, data := range shards {
		name := ShardName(s.cfg.Object, i)
		err := leaderstore.Write(ctx, s.client, s.cfg.Namespace, name, func(cm *corev1.ConfigMap) {
			if cm.Annotations == nil {
				cm.Annotations = map[string]string{}
			}
			cm.Annotations[writerAnnotation] = s.identity
			cm.Annotations[writtenAnnotaton] = now.UTC().Format(time.RFC3339Nano)
			cm.Annotations[droppedAnnotaton] = strconv.Itoa(dropped)
			if cm.Labels == nil {
				cm.Labels = map[string]string{}
			}
			cm.Labels["app.kubernetes.io/managed-by"] = ManagedBy
			cm.Labels[ShardLabel] = strconv.Itoa(i)
			cm.Data = data
		})
		if err != nil {
			s.takeover.Store(true) // write everything again next time
			return fmt.Errorf("writing ConfigMap %s/%s: %w", s.cfg.Namespace, name, err)
		}
	}
	s.written = changes
	return nil
}

// Leading reports that this replica holds the Lease and has merged the stored state: it
// observes and writes.
func (s *Store) Leading() bool { return s.elected.Load() && s.leader.Load() }

// Run runs the leader election and, every flush interval, the leader's write (or a follower's
// read of what the leader wrote) until ctx is done.
func (s *Store) Run(ctx context.Context) {
	e := leaderstore.Election{Client: s.client, Namespace: s.cfg.Namespace, Name: s.cfg.Object, Component: "usage-learner",
		Identity: s.identity, Lease: s.cfg.LeaseDuration, Log: s.log}
	go e.Run(ctx, func(ctx context.Context) {
		s.elected.Store(true)
		if err := s.takeOver(ctx); err != nil {
			s.log.WithError(err).Warn("elected, but cannot read the stored usage yet: not writing until it can")
		}
	}, func() {
		s.elected.Store(false)
		s.leader.Store(false)
		s.log.WithField("identity", s.identity).Info("no longer writing the usage store")
	})
	t := time.NewTicker(s.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var err error
		switch {
		case s.Leading():
			err = s.Flush(ctx, time.Now())
		case s.elected.Load():
			err = s.takeOver(ctx)
		default:
			s.leader.Store(false)
			err = s.Load(ctx)
		}
		if err != nil && ctx.Err() == nil {
			s.log.WithError(err).Warn("usage store")
		}
	}
}

func (s *Store) takeOver(ctx context.Context) error {
	if err := s.Load(ctx); err != nil {
		return err
	}
	s.takeover.Store(true)
	if !s.leader.Swap(true) {
		s.log.WithFields(logrus.Fields{"identity": s.identity, "namespace": s.cfg.Namespace, "object": s.cfg.Object}).
			Info("writing the usage store (leader)")
	}
	return nil
}
