package reward

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-safe-scheduler/extender/settings/settingstest"
)

// gathered returns the value of each gauge and counter of reg, by name.
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		out[mf.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
	}
	return out
}

// The store's series follow the flush loop's ticks and the Lease: a failed tick counts an error
// and keeps the last sync time; a good one moves it; the writer gauge is 1 only for a leader
// that merged the stored table.
func TestStoreMetrics(t *testing.T) {
	// A store of its own, not started: no leader election runs beside the test.
	cfg, err := settingstest.Bind(DefaultConfig(), map[string]string{"REWARD_NAMESPACE": "ns", "REWARD_FLUSH_INTERVAL": "30s"})
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{store: newStore(cfg, fake.NewClientset(), logrus.NewEntry(logrus.New()), newTable(model{}, 0))}
	c := &clock{t: t0}
	reg := prometheus.NewRegistry()
	if err := a.registerMetrics(reg); err != nil {
		t.Fatal(err)
	}
	got := gathered(t, reg)
	if got["reward_table_flush_interval_seconds"] != 30 || got["reward_table_writer"] != 0 || got["reward_table_sync_errors_total"] != 0 {
		t.Fatalf("at the start: %v", got)
	}
	a.store.tick(nil, c.now())
	if got := gathered(t, reg)["reward_table_last_sync_timestamp_seconds"]; got != float64(c.now().Unix()) {
		t.Errorf("last sync %v after a good tick at %v", got, c.now().Unix())
	}
	synced := c.now()
	c.advance(time.Minute)
	a.store.tick(errors.New("conflict"), c.now())
	got = gathered(t, reg)
	if got["reward_table_sync_errors_total"] != 1 || got["reward_table_last_sync_timestamp_seconds"] != float64(synced.Unix()) {
		t.Errorf("after a failed tick: %v, want 1 error and the last sync still %v", got, synced.Unix())
	}
	// Elected and merged (internal/leaderstore's tests cover an election before the merge).
	a.store.Elected(t.Context())
	if gathered(t, reg)["reward_table_writer"] != 1 {
		t.Error("not the writer once elected and merged")
	}
	a.store.Deposed()
	if gathered(t, reg)["reward_table_writer"] != 0 {
		t.Error("still the writer once deposed")
	}
}
