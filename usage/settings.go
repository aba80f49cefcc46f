package usage

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-safe-scheduler/extender/settings"
	"github.com/kube-safe-scheduler/extender/usage/metricsource"
)

// Settings configure the learner where it runs (the node annotator): the off switch, the
// model, the store and the Prometheus queries. The metrics source and Prometheus' address are
// the host program's.
type Settings struct {
	Enabled  bool
	Interval time.Duration
	// Percentile is USAGE_PERCENTILE, an integer percent (90: p90) like every share and
	// percentile setting; Learner gives the model its fraction.
	Percentile int
	Model      Config
	Store      StoreConfig
	// CPUQuery and MemoryQuery are the Prometheus source's queries.
	CPUQuery, MemoryQuery string
}

// Declare adds the learner's settings, with their defaults, to s.
func (c *Settings) Declare(s *settings.Set) {
	d := DefaultConfig()
	s.Bool(&c.Enabled, "USAGE_LEARNER", "usage-learner", false,
		"learn each workload's usage/request from the pods' usage (needs STATS_SOURCE prometheus or metrics-api) and keep it in ConfigMaps for the agents")
	s.Duration(&c.Interval, "USAGE_INTERVAL", "usage-interval", 30*time.Second, time.Second, time.Hour,
		"period of the usage learner's samples of every pod")
	s.Percent(&c.Percentile, "USAGE_PERCENTILE", "usage-percentile", int(math.Round(d.Percentile*100)), 1, 100,
		"percentile of a workload's usage/request the learner's own estimates use (90: p90): those in its ConfigMaps and "+
			"usage_learner_estimate_error; set it to the SAFE_ESTIMATE_PERCENTILE placement uses")
	s.Int(&c.Model.MinObservations, "USAGE_MIN_OBSERVATIONS", "usage-min-observations", d.MinObservations, 1, 1000000,
		"fewest samples of a workload's pods before its estimate is trusted (before: the request)")
	s.Duration(&c.Model.MinSpan, "USAGE_MIN_SPAN", "usage-min-span", d.MinSpan, 0, 30*24*time.Hour,
		"shortest time between a workload's first and latest sample before its estimate is trusted")
	s.Duration(&c.Model.HalfLife, "USAGE_HALF_LIFE", "usage-half-life", d.HalfLife, time.Minute, 365*24*time.Hour,
		"age at which a sample counts half as much as a new one")
	s.Duration(&c.Model.PeakWindow, "USAGE_PEAK_WINDOW", "usage-peak-window", d.PeakWindow, time.Minute, 30*24*time.Hour,
		"a memory estimate never falls below the workload's highest usage in the current and the previous window of this length")
	s.Int(&c.Model.MaxWorkloads, "USAGE_MAX_WORKLOADS", "usage-max-workloads", d.MaxWorkloads, 1, 100000,
		"most workloads kept; the least recently observed go first")
	s.String(&c.Store.Namespace, "USAGE_NAMESPACE", "usage-namespace", "",
		"namespace of the learner's ConfigMaps and Lease (empty: the pod's own namespace, else kube-system)", CheckNamespace)
	s.String(&c.Store.Object, "USAGE_OBJECT", "usage-object", "usage-learner",
		"name of the Lease electing the writer; the ConfigMaps are <name>-0, <name>-1, ...", CheckObject)
	s.Int(&c.Store.Shards, "USAGE_STORE_SHARDS", "usage-store-shards", 16, 1, 64,
		"ConfigMaps the workloads are spread over (each holds at most 1 MB: about 2,400 workloads)")
	s.Duration(&c.Store.FlushInterval, "USAGE_FLUSH_INTERVAL", "usage-flush-interval", time.Minute, time.Second, time.Hour,
		"how often the leader writes the ConfigMaps: at most this much is lost on a restart")
	s.Duration(&c.Store.LeaseDuration, "USAGE_LEASE_DURATION", "usage-lease-duration", 15*time.Second, 3*time.Second, 10*time.Minute,
		"how long the writer's Lease lasts without renewal: the longest a leader change takes")
	s.String(&c.CPUQuery, "USAGE_PROMETHEUS_CPU_QUERY", "usage-prometheus-cpu-query", metricsource.DefaultPodCPUQuery,
		"PromQL giving each pod's cpu usage in cores, one series per pod labelled namespace and pod", checkNotEmpty)
	s.String(&c.MemoryQuery, "USAGE_PROMETHEUS_MEMORY_QUERY", "usage-prometheus-memory-query", metricsource.DefaultPodMemoryQuery,
		"PromQL giving each pod's memory working set in bytes, one series per pod labelled namespace and pod", checkNotEmpty)
}

// Learner returns the learner's model configuration, its percentile the fraction of Percentile.
func (c *Settings) Learner() Config {
	m := c.Model
	m.Percentile = float64(c.Percentile) / 100
	return m
}

// Validate checks the combinations: the learner needs a source other than none.
func (c *Settings) Validate(source string) error {
	if c.Enabled && (source == "" || source == "none") {
		return errors.New("USAGE_LEARNER (or --usage-learner) needs STATS_SOURCE prometheus or metrics-api: the learner reads pod usage from it")
	}
	return nil
}

// CheckNamespace checks a store namespace setting ("" is the default).
func CheckNamespace(v string) error {
	if v == "" {
		return nil
	}
	if msgs := validation.IsDNS1123Label(v); len(msgs) > 0 {
		return fmt.Errorf("%q is not a namespace name: %s", v, strings.Join(msgs, "; "))
	}
	return nil
}

// CheckObject checks a store object name setting.
func CheckObject(v string) error {
	// The longest shard name must be an object name too.
	if msgs := validation.IsDNS1123Subdomain(ShardName(v, 63)); len(msgs) > 0 {
		return fmt.Errorf("%q is not an object name (with the suffix -%s): %s", v, strconv.Itoa(63), strings.Join(msgs, "; "))
	}
	return nil
}

func checkNotEmpty(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("must not be empty")
	}
	return nil
}
