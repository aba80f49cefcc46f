package trimaran

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Metric types and operators, as load-watcher names them (pkg/watcher/watcher.go).
const (
	CPU     = "CPU"
	Memory  = "Memory"
	Average = "AVG"
	Std     = "STD"
)

// Metric is one statistic of a node, in percent of the node's allocatable, as load-watcher's
// watcher.Metric carries it.
type Metric struct {
	Type, Operator string
	Value          float64
}

// Window is the span of the statistics: load-watcher's watcher.Window (End is the time of the
// fetch, Start End minus the window), kept at full precision.
type Window struct {
	Start, End time.Time
}

// nodeFree is a node's statistics as Prometheus answers them in the lab: average and standard
// deviation over the window of its free cpu (millicores) and memory (bytes); has says which of
// the four were in Prometheus' answer.
type nodeFree struct {
	cpuAvg, cpuStd, memAvg, memStd float64
	has                            [4]bool
}

// Metrics is one fetch of the load-watcher stand-in: its window and each node's statistics.
// Nodes is nil before the first successful fetch.
type Metrics struct {
	Window Window
	Nodes  map[string]nodeFree
}

// NodeMetrics returns node's statistics in percent of its allocatable, as load-watcher's
// Prometheus provider returns them (FetchAllHostsMetrics, promResults2MetricMap: the value of
// avg_over_time or stddev_over_time of the utilization ratio, times 100), or nil when there are
// none: when no fetch has succeeded yet or the node was not in the answer (trimaran's
// Collector.GetNodeMetrics returns nil in both cases, and both plugins then score 0).
// Utilization is 1 - free/allocatable, so its average over the window is 1 - avgFree/allocatable
// and its standard deviation stdFree/allocatable.
func (m *Metrics) NodeMetrics(node *v1.Node) []Metric {
	if m == nil || m.Nodes == nil {
		return nil
	}
	f, ok := m.Nodes[node.Name]
	if !ok {
		return nil
	}
	out := []Metric{}
	alloc := node.Status.Allocatable
	if c := float64(alloc.Cpu().MilliValue()); c > 0 {
		if f.has[0] {
			out = append(out, Metric{Type: CPU, Operator: Average, Value: 100 * (1 - f.cpuAvg/c)})
		}
		if f.has[1] {
			out = append(out, Metric{Type: CPU, Operator: Std, Value: 100 * f.cpuStd / c})
		}
	}
	if mem := float64(alloc.Memory().Value()); mem > 0 {
		if f.has[2] {
			out = append(out, Metric{Type: Memory, Operator: Average, Value: 100 * (1 - f.memAvg/mem)})
		}
		if f.has[3] {
			out = append(out, Metric{Type: Memory, Operator: Std, Value: 100 * f.memStd / mem})
		}
	}
	return out
}

// Settings configure the load-watcher stand-in and the plugins' periods. Every duration is real
// time: the lab passes the shipped values divided by its speed.
type Settings struct {
	// PrometheusURL is Prometheus' address (TRIMARAN_PROMETHEUS_URL, required).
	PrometheusURL string
	// NodeLabel is the label naming the node in the free-resource series (TRIMARAN_NODE_LABEL,
	// default node).
	NodeLabel string
	// CPUFreeMetric and MemoryFreeMetric are the series of each node's free cpu (millicores)
	// and memory (bytes) (TRIMARAN_CPU_FREE_METRIC, TRIMARAN_MEMORY_FREE_METRIC; default the
	// lab's lab_node_free_cpu_millicores and lab_node_free_memory_bytes).
	CPUFreeMetric, MemoryFreeMetric string
	// Window is the span of the statistics (TRIMARAN_WINDOW, default 15m: load-watcher's
	// FifteenMinutes, the window the plugins read).
	Window time.Duration
	// WatcherInterval is the pause between two fetches (TRIMARAN_WATCHER_INTERVAL, default 1m:
	// load-watcher's windowWatcher sleeps a minute after each fetch).
	WatcherInterval time.Duration
	// CollectorInterval is how often the plugins copy the latest fetch
	// (TRIMARAN_COLLECTOR_INTERVAL, default 30s: trimaran's metricsUpdateIntervalSeconds).
	CollectorInterval time.Duration
	// ReportingInterval is how long after its binding a pod's usage is taken to be missing from
	// the metrics (TRIMARAN_REPORTING_INTERVAL, default 60s: metricsAgentReportingIntervalSeconds
	// of targetloadpacking.go and handler.go).
	ReportingInterval time.Duration
	// CacheCleanup is how often the cache of bound pods is cleaned (TRIMARAN_CACHE_CLEANUP,
	// default 5m: handler.go's cacheCleanupIntervalMinutes).
	CacheCleanup time.Duration
}

// SettingsFromEnv reads Settings from getenv; a missing required or a bad value is an error
// naming the variable.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	s := Settings{
		PrometheusURL: getenv("TRIMARAN_PROMETHEUS_URL"),
		NodeLabel:     "node", CPUFreeMetric: "lab_node_free_cpu_millicores", MemoryFreeMetric: "lab_node_free_memory_bytes",
		Window: 15 * time.Minute, WatcherInterval: time.Minute, CollectorInterval: 30 * time.Second,
		ReportingInterval: 60 * time.Second, CacheCleanup: 5 * time.Minute,
	}
	if s.PrometheusURL == "" {
		return s, fmt.Errorf("TRIMARAN_PROMETHEUS_URL is not set: the plugins read their statistics from Prometheus")
	}
	if u, err := url.Parse(s.PrometheusURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return s, fmt.Errorf("TRIMARAN_PROMETHEUS_URL %q is not an http(s) URL", s.PrometheusURL)
	}
	for name, p := range map[string]*string{"TRIMARAN_NODE_LABEL": &s.NodeLabel,
		"TRIMARAN_CPU_FREE_METRIC": &s.CPUFreeMetric, "TRIMARAN_MEMORY_FREE_METRIC": &s.MemoryFreeMetric} {
		if v := getenv(name); v != "" {
			*p = v
		}
	}
	for name, p := range map[string]*time.Duration{"TRIMARAN_WINDOW": &s.Window, "TRIMARAN_WATCHER_INTERVAL": &s.WatcherInterval,
		"TRIMARAN_COLLECTOR_INTERVAL": &s.CollectorInterval, "TRIMARAN_REPORTING_INTERVAL": &s.ReportingInterval,
		"TRIMARAN_CACHE_CLEANUP": &s.CacheCleanup} {
		v := getenv(name)
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("%s %q is not a positive duration", name, v)
		}
		*p = d
	}
	if s.Window < time.Millisecond {
		return s, fmt.Errorf("TRIMARAN_WINDOW %s is shorter than Prometheus' millisecond", s.Window)
	}
	return s, nil
}

// fetcher is the load-watcher stand-in: it queries Prometheus as load-watcher's Prometheus
// provider does (one instant query per statistic over every node).
type fetcher struct {
	s      Settings
	client *http.Client
	now    func() time.Time
}

// queries returns the four instant queries of a fetch, in nodeFree.has order:
// load-watcher's buildPromQuery with host "all" ("%s(%s[%s])", method, metric, rollup).
func (f *fetcher) queries() [4]string {
	rollup := strconv.FormatInt(f.s.Window.Milliseconds(), 10) + "ms"
	return [4]string{
		"avg_over_time(" + f.s.CPUFreeMetric + "[" + rollup + "])",
		"stddev_over_time(" + f.s.CPUFreeMetric + "[" + rollup + "])",
		"avg_over_time(" + f.s.MemoryFreeMetric + "[" + rollup + "])",
		"stddev_over_time(" + f.s.MemoryFreeMetric + "[" + rollup + "])",
	}
}

// fetch runs the four queries at the current time. Like load-watcher's fetchOnce, a fetch in
// which any query failed is dropped whole.
func (f *fetcher) fetch(ctx context.Context) (*Metrics, error) {
	at := f.now()
	m := &Metrics{Window: Window{Start: at.Add(-f.s.Window), End: at}, Nodes: map[string]nodeFree{}}
	for i, q := range f.queries() {
		values, err := f.query(ctx, q, at)
		if err != nil {
			return nil, err
		}
		for node, v := range values {
			nf := m.Nodes[node]
			switch i {
			case 0:
				nf.cpuAvg = v
			case 1:
				nf.cpuStd = v
			case 2:
				nf.memAvg = v
			case 3:
				nf.memStd = v
			}
			nf.has[i] = true
			m.Nodes[node] = nf
		}
	}
	return m, nil
}

// query runs an instant query and returns each series' value by its node label.
func (f *fetcher) query(ctx context.Context, q string, at time.Time) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second) // load-watcher's getPromResults timeout
	defer cancel()
	u := f.s.PrometheusURL + "/api/v1/query?" + url.Values{
		"query": {q}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q, err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("query %s: HTTP %d, %w", q, resp.StatusCode, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %s: HTTP %d, %s", q, resp.StatusCode, body.Error)
	}
	if body.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: result of type %q, want vector", q, body.Data.ResultType)
	}
	out := map[string]float64{}
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %s: value %v: %w", q, r.Value[1], err)
		}
		out[r.Metric[f.s.NodeLabel]] = v
	}
	return out, nil
}

// Collector holds the statistics the plugins read: trimaran's Collector (collector.go), which
// copies load-watcher's latest fetch every CollectorInterval, over the fetcher run every
// WatcherInterval (load-watcher's StartWatching). Two stages, as in the shipped setup: the
// statistics the plugins read are up to WatcherInterval + CollectorInterval old.
type Collector struct {
	mu      sync.RWMutex
	latest  *Metrics // the watcher's latest successful fetch
	current Metrics  // what the plugins read
}

// Latest returns the statistics the plugins read now.
func (c *Collector) Latest() *Metrics {
	c.mu.RLock()
	defer c.mu.RUnlock()
	m := c.current
	return &m
}

// set makes m what the plugins read (tests and the collector's update).
func (c *Collector) set(m Metrics) {
	c.mu.Lock()
	c.current = m
	c.mu.Unlock()
}

// StartCollector fetches once, then starts the watcher's and the collector's loops until ctx
// ends.
func StartCollector(ctx context.Context, s Settings) *Collector {
	logger := klog.FromContext(ctx)
	f := &fetcher{s: s, client: &http.Client{}, now: time.Now}
	c := &Collector{}
	watch := func() {
		m, err := f.fetch(ctx)
		if err != nil {
			logger.Error(err, "trimaran: fetching the statistics from Prometheus")
			return
		}
		c.mu.Lock()
		first := c.latest == nil
		c.latest = m
		c.mu.Unlock()
		if first {
			logger.Info("trimaran: first statistics from Prometheus", "nodes", len(m.Nodes), "window", s.Window)
		}
	}
	collect := func() {
		c.mu.Lock()
		if c.latest != nil {
			c.current = *c.latest
		}
		c.mu.Unlock()
	}
	watch()
	collect()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(s.WatcherInterval):
				watch()
			}
		}
	}()
	go func() {
		t := time.NewTicker(s.CollectorInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				collect()
			}
		}
	}()
	return c
}
