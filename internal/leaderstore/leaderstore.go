// Package leaderstore keeps learnt state in ConfigMaps written behind by one elected replica
// (the reward agent's table, the usage learner's workloads). Store owns the whole loop: the
// leader election on its Lease, the load, the periodic flush of every ConfigMap (one, or
// shards), a follower's periodic read, the writer's identity and the namespace default; the
// state's owner gives only its encoding and merge (State). Write is the ConfigMap write with
// optimistic concurrency; Every is the ticker loop.
package leaderstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/retry"
)

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// MaxObjectBytes keeps a ConfigMap's data under the API server's 1 MiB object limit, with room
// for its metadata.
const MaxObjectBytes = 1000 * 1000

// Namespace returns configured, else the pod's own namespace, else kube-system.
func Namespace(configured string) string {
	if configured != "" {
		return configured
	}
	if b, err := os.ReadFile(serviceAccountNamespace); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return "kube-system"
}

// Identity names this replica in the Lease and on what it writes: its host name and a random
// suffix (two processes on one host differ).
func Identity() string {
	host, _ := os.Hostname()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	return host + "_" + hex.EncodeToString(suffix)
}

// RetryPeriod is how often the leader renews the Lease and the others try to acquire it. A
// follower takes over once it has seen no renewal for the Lease duration, so a leader change
// takes the Lease duration plus up to about two retry periods (client-go polls with jitter).
func RetryPeriod(lease time.Duration) time.Duration { return lease / 10 }

// Election names the Lease and its holder.
type Election struct {
	Client    kubernetes.Interface
	Namespace string
	// Name is the Lease's; Component names the election in client-go's logs.
	Name, Component string
	Identity        string
	Lease           time.Duration
	Log             *logrus.Entry
}

// Run runs the leader election until ctx is done, calling started when this replica becomes
// the leader (with a context cancelled when it stops leading) and stopped when it stops.
func (e Election) Run(ctx context.Context, started func(ctx context.Context), stopped func()) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.Namespace, Name: e.Name},
		Client:     e.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.Identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   e.Lease,
			RenewDeadline:   e.Lease * 2 / 3,
			RetryPeriod:     RetryPeriod(e.Lease),
			ReleaseOnCancel: true,
			Name:            e.Component,
			Callbacks:       leaderelection.LeaderCallbacks{OnStartedLeading: started, OnStoppedLeading: stopped},
		})
		if err != nil {
			e.Log.WithError(err).Error("leader election cannot run")
			return
		}
		le.Run(ctx)
	}
}

// Write creates or replaces the ConfigMap namespace/name with optimistic concurrency: the
// update carries the resourceVersion read, and a conflict (another writer in between, as during
// a leader change) reads again and retries. stamp fills the object (data, labels, annotations)
// before each attempt.
func Write(ctx context.Context, client kubernetes.Interface, namespace, name string, stamp func(*corev1.ConfigMap)) error {
	cms := client.CoreV1().ConfigMaps(namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
			stamp(cm)
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		stamp(cm)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
}
