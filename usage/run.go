package usage

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// Runner is the learning loop: every interval, the leader reads every pod's usage from the
// source and teaches the learner; the store writes behind.
type Runner struct {
	Learner  *Learner
	Source   Source
	Pods     corelisters.PodLister
	Store    *Store
	Metrics  *Metrics // may be nil
	Interval time.Duration
	Log      *logrus.Entry

	// seen is each pod's sample time of the last round: a source that still shows the same
	// sample (metrics-server refreshes every 15 to 60 s) does not teach it twice.
	seen map[podName]time.Time
}

// Start loads the stored state (an error, such as missing permissions, stops the caller), then
// runs the store's election and writes and the learning loop in the background until ctx is
// done.
func (r *Runner) Start(ctx context.Context) error {
	loadCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := r.Store.Load(loadCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("%w (the service account needs get and update on the ConfigMaps %s.. and the Lease %s in %s, and create on them unless they exist: the chart creates them)",
			err, ShardName(r.Store.cfg.Object, 0), r.Store.cfg.Object, r.Store.Namespace())
	}
	r.Log.WithFields(logrus.Fields{"workloads": r.Learner.Len(), "source": r.Source.Name(),
		"configmaps": r.Store.Namespace() + "/" + ShardName(r.Store.cfg.Object, 0) + "..",
		"shards":     r.Store.cfg.Shards}).Info("usage learner loaded its store")
	go r.Store.Run(ctx)
	go r.loop(ctx)
	return nil
}

func (r *Runner) loop(ctx context.Context) {
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			r.Round(ctx, now)
		}
	}
}

// Round is one learning round: nothing unless this replica leads the store.
func (r *Runner) Round(ctx context.Context, now time.Time) {
	if !r.Store.Leading() {
		r.count("skipped")
		return
	}
	samples, err := r.Source.PodUsage(ctx, now)
	if err != nil {
		r.count("error")
		if ctx.Err() == nil {
			r.Log.WithError(err).Warn("usage learner: no pod usage this round")
		}
		return
	}
	seen := make(map[podName]time.Time, len(samples))
	observed, estimated := 0, 0
	for _, u := range samples {
		pod, err := r.Pods.Pods(u.Namespace).Get(u.Name)
		if err != nil { // not (or no longer) in the cache
			continue
		}
		k := podName{u.Namespace, u.Name}
		seen[k] = u.At
		if at, ok := r.seen[k]; ok && !u.At.After(at) {
			continue
		}
		// The estimate before this sample, against what the pod then used.
		e := r.Learner.Estimate(pod)
		if e.Trusted && r.Metrics != nil {
			reqCPU, reqMem := Requests(pod)
			r.Metrics.observeError("cpu", "estimate", u.CPU, e.CPU)
			r.Metrics.observeError("memory", "estimate", u.Memory, e.Memory)
			r.Metrics.observeError("cpu", "request", u.CPU, reqCPU)
			r.Metrics.observeError("memory", "request", u.Memory, reqMem)
		}
		if r.Learner.Observe(pod, u.CPU, u.Memory, u.At).IsZero() {
			continue
		}
		observed++
		if e.Trusted {
			estimated++
		}
	}
	r.seen = seen
	r.count("ok")
	if m := r.Metrics; m != nil {
		m.workloads.Set(float64(r.Learner.Len()))
		m.pods.WithLabelValues("observed").Set(float64(observed))
		m.pods.WithLabelValues("estimated").Set(float64(estimated))
		if observed > 0 {
			m.coverage.Set(float64(estimated) / float64(observed))
		}
		m.dropped.Set(float64(r.Store.dropped()))
	}
	if r.Log.Logger.IsLevelEnabled(logrus.DebugLevel) {
		r.Log.WithFields(logrus.Fields{"samples": len(samples), "observed": observed, "estimated": estimated,
			"workloads": r.Learner.Len()}).Debug("usage learner round")
	}
}

func (r *Runner) count(result string) {
	if r.Metrics != nil {
		r.Metrics.rounds.WithLabelValues(result).Inc()
	}
}

// podName names a pod in the runner's memory of the samples it learnt from.
type podName struct{ ns, pod string }
