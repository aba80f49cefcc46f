package reward

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// storeMetrics tell an operator whether the table reaches its ConfigMap: when this replica last
// knew its table and the stored one in step (the leader wrote, or had nothing new to write; a
// follower read the stored table), whether it is the writer, and how often it should be.
type storeMetrics struct {
	synced prometheus.Gauge
	errors prometheus.Counter
}

// registerMetrics registers the store's series on reg; without a store (no cluster access)
// there is no table to flush and nothing is registered.
func (a *Agent) registerMetrics(reg prometheus.Registerer) error {
	s := a.store
	if s == nil || reg == nil {
		return nil
	}
	m := &storeMetrics{
		synced: prometheus.NewGauge(prometheus.GaugeOpts{Name: "reward_table_last_sync_timestamp_seconds",
			Help: "When this replica's flush loop last had the table and its ConfigMap in step (the leader wrote it or had nothing new; a follower read it), Unix time."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "reward_table_sync_errors_total",
			Help: "Flush-loop ticks that failed to write (leader) or read (follower) the table's ConfigMap."}),
	}
	writer := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "reward_table_writer",
		Help: "1 when this replica holds the Lease and writes the table, else 0."}, func() float64 {
		if s.Leading() {
			return 1
		}
		return 0
	})
	interval := prometheus.NewGauge(prometheus.GaugeOpts{Name: "reward_table_flush_interval_seconds",
		Help: "The configured flush interval (REWARD_FLUSH_INTERVAL), for alerts on a table not flushed."})
	interval.Set(s.interval.Seconds())
	for _, c := range []prometheus.Collector{m.synced, m.errors, writer, interval} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("reward agent metrics: %w", err)
		}
	}
	// Counted from the start: a table never in step since is as late as one out of step since.
	m.synced.Set(float64(time.Now().Unix()))
	s.metrics.Store(m)
	return nil
}

// tick records the outcome of one flush-loop tick.
func (s *store) tick(err error, now time.Time) {
	m := s.metrics.Load()
	if m == nil {
		return
	}
	if err != nil {
		m.errors.Inc()
		return
	}
	m.synced.Set(float64(now.UnixNano()) / 1e9)
}

// metricsPtr is the store's metrics, set once after registration.
type metricsPtr = atomic.Pointer[storeMetrics]
