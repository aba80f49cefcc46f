package leaderstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// State is what a Store keeps: the learnt state's own encoding and merge. The store calls it;
// it knows nothing of ConfigMaps, Leases or leaders.
type State interface {
	// Merge merges in the stored ConfigMap Objects[i] (its data; its annotations name the
	// writer).
	Merge(i int, cm *corev1.ConfigMap) error
	// Snapshot returns the data of every ConfigMap (one map per Objects entry, in order) and a
	// count that changes whenever the state does. An error (such as a state too large for its
	// ConfigMaps) writes nothing, and the next flush tries again.
	Snapshot(now time.Time) (objects []map[string]string, changes uint64, err error)
	// Stamp adds the state's own labels and annotations to ConfigMap i before it is written
	// (the store has set the managed-by label and the writer and written-at annotations).
	Stamp(i int, cm *corev1.ConfigMap)
}

// Config places a Store and names it.
type Config struct {
	Client kubernetes.Interface
	// Namespace of the ConfigMaps and the Lease, resolved by Namespace (empty: the pod's own).
	Namespace string
	// Lease names the Lease electing the writer; Objects the ConfigMaps, in the State's order.
	Lease   string
	Objects []string
	// Component names the election in client-go's logs; What names the state in this
	// package's logs ("the reward table").
	Component, What string
	// ManagedBy is every ConfigMap's app.kubernetes.io/managed-by label; AnnotationPrefix
	// that of its writer and written-at annotations ("reward.kube-safe-scheduler.io/").
	ManagedBy, AnnotationPrefix string
	// SkipUnreadable: a ConfigMap whose data does not merge is logged and skipped, the others
	// read; otherwise it fails the load.
	SkipUnreadable bool
	FlushInterval  time.Duration
	LeaseDuration  time.Duration
	Log            *logrus.Entry
}

// Store keeps a State in ConfigMaps written behind by one elected replica: the replica holding
// the Lease merges what is stored when it takes over, then writes every flush interval when
// the state changed; the others merge the stored state in at the same pace.
type Store struct {
	cfg      Config
	state    State
	identity string

	// elected: this replica holds the Lease; leader: and it has merged the stored state since,
	// so it may write (a leader that could not read must not overwrite).
	elected, leader atomic.Bool
	// takeover makes the next flush write even with nothing new, so that the ConfigMaps exist
	// and name the new writer (and a failed write is retried).
	takeover atomic.Bool
	// written is the state's change count at the last complete write (flush loop only).
	written uint64
}

// New returns the store of state; cfg.Namespace is resolved (Namespace).
func New(cfg Config, state State) *Store {
	cfg.Namespace = Namespace(cfg.Namespace)
	return &Store{cfg: cfg, state: state, identity: Identity()}
}

// Namespace is where the store's ConfigMaps and Lease are.
func (s *Store) Namespace() string { return s.cfg.Namespace }

// Identity names this replica in the Lease and on what it writes.
func (s *Store) Identity() string { return s.identity }

// Leading reports that this replica holds the Lease and has merged the stored state: it
// writes.
func (s *Store) Leading() bool { return s.elected.Load() && s.leader.Load() }

// Load merges every stored ConfigMap in; a missing one is empty.
func (s *Store) Load(ctx context.Context) error {
	var errs []error
	for i, name := range s.cfg.Objects {
		cm, err := s.cfg.Client.CoreV1().ConfigMaps(s.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading ConfigMap %s/%s: %w", s.cfg.Namespace, name, err)
		}
		if err := s.state.Merge(i, cm); err != nil {
			err = fmt.Errorf("ConfigMap %s/%s: %w", s.cfg.Namespace, name, err)
			if !s.cfg.SkipUnreadable {
				return err
			}
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		s.cfg.Log.WithError(errors.Join(errs...)).Warnf("some of %s was not read", s.cfg.What)
	}
	return nil
}

// Flush writes every ConfigMap when the state changed since the last write (or a takeover or
// a failed write asks for one), each with optimistic concurrency (Write).
func (s *Store) Flush(ctx context.Context, now time.Time) error {
	objects, changes, err := s.state.Snapshot(now)
	if err != nil {
		s.takeover.Store(true) // try again next time, changed or not
		return err
	}
	if !s.takeover.Swap(false) && changes == s.written {
		return nil
	}
	if len(objects) != len(s.cfg.Objects) {
		return fmt.Errorf("%s: %d ConfigMaps of data for %d ConfigMaps", s.cfg.What, len(objects), len(s.cfg.Objects))
	}
	for i, name := range s.cfg.Objects {
		err := Write(ctx, s.cfg.Client, s.cfg.Namespace, name, func(cm *corev1.ConfigMap) {
			if cm.Annotations == nil {
				cm.Annotations = map[string]string{}
			}
			cm.Annotations[s.cfg.AnnotationPrefix+"writer"] = s.identity
			cm.Annotations[s.cfg.AnnotationPrefix+"written-at"] = now.UTC().Format(time.RFC3339Nano)
			if cm.Labels == nil {
				cm.Labels = map[string]string{}
			}
			cm.Labels["app.kubernetes.io/managed-by"] = s.cfg.ManagedBy
			s.state.Stamp(i, cm)
			cm.Data = objects[i]
		})
		if err != nil {
			s.takeover.Store(true) // write everything again next time
			return fmt.Errorf("writing ConfigMap %s/%s: %w", s.cfg.Namespace, name, err)
		}
	}
	s.written = changes
	return nil
}

// TakeOver merges the stored state (what the previous leader wrote that this replica did not
// see), then lets this replica write, at once on the next flush. Elect calls it on election.
func (s *Store) TakeOver(ctx context.Context) error {
	if err := s.Load(ctx); err != nil {
		return err
	}
	s.takeover.Store(true)
	if !s.leader.Swap(true) {
		s.cfg.Log.WithFields(logrus.Fields{"identity": s.identity, "namespace": s.cfg.Namespace, "lease": s.cfg.Lease}).
			Infof("writing %s (leader)", s.cfg.What)
	}
	return nil
}

// Elect runs the leader election on the Lease until ctx is done.
func (s *Store) Elect(ctx context.Context) {
	e := Election{Client: s.cfg.Client, Namespace: s.cfg.Namespace, Name: s.cfg.Lease, Component: s.cfg.Component,
		Identity: s.identity, Lease: s.cfg.LeaseDuration, Log: s.cfg.Log}
	e.Run(ctx, s.Elected, s.Deposed)
}

// Elected is called when this replica wins the Lease: it takes over, or, when it cannot read
// the stored state yet, waits for a later flush tick to take over.
func (s *Store) Elected(ctx context.Context) {
	s.elected.Store(true)
	if err := s.TakeOver(ctx); err != nil {
		s.cfg.Log.WithError(err).Warnf("elected, but cannot read %s yet: not writing until it can", s.cfg.What)
	}
}

// Deposed is called when this replica loses the Lease.
func (s *Store) Deposed() {
	s.elected.Store(false)
	s.leader.Store(false)
	s.cfg.Log.WithField("identity", s.identity).Infof("no longer writing %s", s.cfg.What)
}

// Sync is one flush-interval step: the leader writes, an elected replica that could not take
// over tries again, a follower merges the stored state in.
func (s *Store) Sync(ctx context.Context, now time.Time) error {
	switch {
	case s.Leading():
		return s.Flush(ctx, now)
	case s.elected.Load():
		return s.TakeOver(ctx)
	default:
		s.leader.Store(false) // deposed while taking over
		return s.Load(ctx)
	}
}

// Hooks let the store's owner act on every flush-interval tick.
type Hooks struct {
	// Before runs first at every tick (the reward agent observes the pods past their timeout).
	Before func()
	// After receives every tick's outcome, unless ctx is done (metrics).
	After func(err error, now time.Time)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Run runs the leader election and, every flush interval, Sync until ctx is done. A failed
// step is logged and tried again at the next tick.
func (s *Store) Run(ctx context.Context, h Hooks) {
	now := h.Now
	if now == nil {
		now = time.Now
	}
	go s.Elect(ctx)
	Every(ctx, s.cfg.FlushInterval, func() {
		if h.Before != nil {
			h.Before()
		}
		at := now()
		err := s.Sync(ctx, at)
		if ctx.Err() != nil {
			return
		}
		if h.After != nil {
			h.After(err, at)
		}
		if err != nil {
			s.cfg.Log.WithError(err).Warn(s.cfg.What)
		}
	})
}

// Every calls f every interval until ctx is done; the first call is one interval from now.
func Every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
