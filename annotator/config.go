package annotator

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-safe-scheduler/extender/internal/logging"
	"github.com/kube-safe-scheduler/extender/settings"
)

// Statistics sources (STATS_SOURCE).
const (
	SourceNone       = "none"
	SourcePrometheus = "prometheus"
	SourceMetricsAPI = "metrics-api"
)

// Config holds the annotator's settings. Declare gives each its variable, flag and default.
type Config struct {
	// Listen is the address of the probe and metrics endpoints (HTTP_PORT).
	Listen string
	// Log is the logger's level and format (LOG_LEVEL, LOG_FORMAT).
	Log logging.Config

	// Interval is the period of the allocation annotations and of metrics API sampling (INTERVAL).
	Interval time.Duration
	// Source is where the usage statistics come from (STATS_SOURCE); none writes only the
	// allocation annotations.
	Source string
	// StatsInterval is the period of the statistics (STATS_INTERVAL).
	StatsInterval time.Duration
	// Window is the span the statistics cover (STATS_WINDOW).
	Window time.Duration
	// MinSamples is the fewest samples a statistic is computed from (STATS_MIN_SAMPLES).
	MinSamples int
	// Tolerance is the relative change below which a statistic is not rewritten, in percent
	// (STATS_TOLERANCE; 2 = 2 %). Allocation annotations are rewritten on any change.
	Tolerance int
	// Refresh is the age after which the statistics and their timestamp are rewritten even
	// when unchanged (STATS_REFRESH).
	Refresh time.Duration
	// Holt holds the forecast's smoothing factors (FORECAST_ALPHA, FORECAST_BETA).
	Holt Holt

	// GPUResource is the extended resource counted in requested-gpu and free-gpu (GPU_RESOURCE).
	GPUResource string
	// PatchQPS and PatchBurst bound the rate of node patches (PATCH_QPS, PATCH_BURST).
	PatchQPS   float64
	PatchBurst int

	// Prometheus configures the Prometheus source (PROMETHEUS_*); its Window is ignored:
	// STATS_WINDOW (Window above) gives it.
	Prometheus PrometheusConfig
}

// Declare adds the annotator's settings, with their defaults, to s.
func (c *Config) Declare(s *settings.Set) {
	s.String(&c.Listen, "HTTP_PORT", "listen", ":8080",
		"address of /healthz, /readyz and /metrics: a port (8080) or host:port; empty to serve nothing", nil)
	c.Log.Declare(s)

	s.Duration(&c.Interval, "INTERVAL", "interval", 30*time.Second, time.Second, time.Hour,
		"period of the allocation annotations and of metrics API sampling")
	s.Enum(&c.Source, "STATS_SOURCE", "stats-source", SourceNone,
		[]string{SourceNone, SourcePrometheus, SourceMetricsAPI}, "source of the usage statistics (none: allocation annotations only)")
	s.Duration(&c.StatsInterval, "STATS_INTERVAL", "stats-interval", time.Minute, time.Second, 24*time.Hour,
		"period of the usage statistics")
	s.Duration(&c.Window, "STATS_WINDOW", "stats-window", 15*time.Minute, time.Second, 30*24*time.Hour,
		"span of time the usage statistics cover")
	s.Int(&c.MinSamples, "STATS_MIN_SAMPLES", "stats-min-samples", 3, 1, 1000000,
		"fewest samples the statistics are computed from; fewer leave the node's statistics untouched")
	s.Percent(&c.Tolerance, "STATS_TOLERANCE", "stats-tolerance", 2, 0, 100,
		"relative change below which a statistic is not rewritten (2: 2 %)")
	s.Duration(&c.Refresh, "STATS_REFRESH", "stats-refresh", 30*time.Minute, time.Second, 7*24*time.Hour,
		"age after which unchanged statistics and their timestamp are rewritten")
	s.Float(&c.Holt.Alpha, "FORECAST_ALPHA", "forecast-alpha", 0.5, 0.01, 1,
		"level smoothing factor of the Holt forecast (near 1: follow the last sample)")
	s.Float(&c.Holt.Beta, "FORECAST_BETA", "forecast-beta", 0.1, 0, 1,
		"trend smoothing factor of the Holt forecast (0: keep the initial trend)")

	s.String(&c.GPUResource, "GPU_RESOURCE", "gpu-resource", "nvidia.com/gpu",
		"extended resource counted in requested-gpu and free-gpu", checkResourceName)
	s.Float(&c.PatchQPS, "PATCH_QPS", "patch-qps", 20, 0.01, 10000, "sustained node patches per second")
	s.Int(&c.PatchBurst, "PATCH_BURST", "patch-burst", 40, 1, 100000, "burst of node patches above PATCH_QPS")

	s.String(&c.Prometheus.URL, "PROMETHEUS_URL", "prometheus-url", "",
		"Prometheus base URL (http://prometheus.monitoring:9090); required with STATS_SOURCE=prometheus", checkURL)
	s.String(&c.Prometheus.CPUQuery, "PROMETHEUS_CPU_QUERY", "prometheus-cpu-query", DefaultCPUQuery,
		"PromQL giving each node's free cpu in millicores, one series per node", checkNotEmpty)
	s.String(&c.Prometheus.MemoryQuery, "PROMETHEUS_MEMORY_QUERY", "prometheus-memory-query", DefaultMemoryQuery,
		"PromQL giving each node's free memory in bytes, one series per node", checkNotEmpty)
	s.String(&c.Prometheus.NodeLabel, "PROMETHEUS_NODE_LABEL", "prometheus-node-label", DefaultNodeLabel,
		"series label naming the node: its value, without a :port, is matched to the node's name or addresses", checkLabelName)
	s.Duration(&c.Prometheus.Step, "PROMETHEUS_STEP", "prometheus-step", time.Minute, time.Second, 24*time.Hour,
		"resolution of the range queries (and the forecast's step)")
	s.Duration(&c.Prometheus.Timeout, "PROMETHEUS_TIMEOUT", "prometheus-timeout", 30*time.Second, time.Second, 10*time.Minute,
		"timeout of one Prometheus query")
}

// Validate checks what single settings cannot: the combinations. Every problem is reported,
// each naming its variables.
func (c *Config) Validate() error {
	var errs []error
	switch c.Source {
	case SourcePrometheus:
		if c.Prometheus.URL == "" {
			errs = append(errs, errors.New("PROMETHEUS_URL (or --prometheus-url) is required with STATS_SOURCE=prometheus"))
		}
		if n := int(c.Window / c.Prometheus.Step); n < c.MinSamples {
			errs = append(errs, fmt.Errorf("STATS_WINDOW %s holds %d steps of PROMETHEUS_STEP %s, fewer than STATS_MIN_SAMPLES %d",
				c.Window, n, c.Prometheus.Step, c.MinSamples))
		}
	case SourceMetricsAPI:
		if n := int(c.Window / c.Interval); n < c.MinSamples {
			errs = append(errs, fmt.Errorf("STATS_WINDOW %s holds %d samples taken every INTERVAL %s, fewer than STATS_MIN_SAMPLES %d",
				c.Window, n, c.Interval, c.MinSamples))
		}
	}
	return errors.Join(errs...)
}

func checkURL(v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", v)
	}
	return nil
}

func checkNotEmpty(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("must not be empty")
	}
	return nil
}

func checkLabelName(v string) error {
	if v == "" {
		return errors.New("must not be empty")
	}
	for i, r := range v {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return fmt.Errorf("%q is not a Prometheus label name", v)
		}
	}
	return nil
}

func checkResourceName(v string) error {
	if errs := validation.IsQualifiedName(v); len(errs) > 0 {
		return fmt.Errorf("%q is not a resource name: %s", v, strings.Join(errs, "; "))
	}
	if !strings.Contains(v, "/") {
		return fmt.Errorf("%q is not an extended resource name (domain/name, such as nvidia.com/gpu)", v)
	}
	return nil
}
