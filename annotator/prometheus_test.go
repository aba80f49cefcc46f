package annotator

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/nodestats"
	"github.com/kube-safe-scheduler/extender/usage/metricsource"
)

// exposition serves node_exporter-style metrics, one sample per scrape with an explicit
// timestamp, walking through a fixed script of samples: Prometheus then stores exactly the
// samples the test chose, at the times it chose, however the scrapes are timed.
type exposition struct {
	times  []time.Time
	memory []float64 // node_memory_MemAvailable_bytes at times[i]
	idle   []float64 // node_cpu_seconds_total{mode="idle"} of each of the 2 cpus at times[i]

	mu     sync.Mutex
	served int // scrapes answered
}

func (e *exposition) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	i := min(e.served, len(e.times)-1) // after the script, the last sample again (a duplicate Prometheus drops)
	e.served++
	e.mu.Unlock()
	ts := e.times[i].UnixMilli()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# HELP node_memory_MemAvailable_bytes Memory information field MemAvailable_bytes.\n")
	fmt.Fprintf(w, "# TYPE node_memory_MemAvailable_bytes gauge\n")
	fmt.Fprintf(w, "node_memory_MemAvailable_bytes %s %d\n", strconv.FormatFloat(e.memory[i], 'f', -1, 64), ts)
	fmt.Fprintf(w, "# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n")
	fmt.Fprintf(w, "# TYPE node_cpu_seconds_total counter\n")
	for cpu := range 2 {
		fmt.Fprintf(w, "node_cpu_seconds_total{cpu=\"%d\",mode=\"idle\"} %s %d\n", cpu, strconv.FormatFloat(e.idle[i], 'f', -1, 64), ts)
		fmt.Fprintf(w, "node_cpu_seconds_total{cpu=\"%d\",mode=\"user\"} %s %d\n", cpu, strconv.FormatFloat(e.idle[i]/3, 'f', -1, 64), ts)
	}
}

func (e *exposition) scrapes() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.served
}

// prometheusBinary finds the Prometheus server: PROMETHEUS_BIN, else prometheus on PATH
// (hack/install-prometheus.sh installs it). Without one the test is skipped, unless
// REQUIRE_PROMETHEUS is set (make test sets it), when it fails.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROMETHEUS_BIN"); p != "" {
		return p
	}
	p, err := exec.LookPath("prometheus")
	if err == nil {
		return p
	}
	if os.Getenv("REQUIRE_PROMETHEUS") != "" {
		t.Fatalf("no Prometheus server (PROMETHEUS_BIN or prometheus on PATH); run hack/install-prometheus.sh")
	}
	t.Skip("no Prometheus server (PROMETHEUS_BIN or prometheus on PATH); run hack/install-prometheus.sh")
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startPrometheus runs a Prometheus server on a free loopback port, scraping target every
// 100 ms, with its storage in a temporary directory. It returns the server's URL; the process
// is killed when the test ends.
func startPrometheus(t *testing.T, bin, target string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 100ms
  scrape_timeout: 100ms
scrape_configs:
- job_name: node
  static_configs:
  - targets: [%q]
`, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// A port found free may be taken before Prometheus binds it: try a few.
	for attempt := 0; attempt < 5; attempt++ {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		logFile, err := os.Create(filepath.Join(dir, fmt.Sprintf("prometheus-%d.log", attempt)))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin,
			"--config.file="+filepath.Join(dir, "prometheus.yml"),
			"--storage.tsdb.path="+filepath.Join(dir, fmt.Sprintf("data-%d", attempt)),
			"--web.listen-address="+addr,
			"--log.level=warn")
		cmd.Stdout, cmd.Stderr = logFile, logFile
		// Killed with this process if the test binary dies first.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting %s: %v", bin, err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		url := "http://" + addr
		if waitReady(url, exited) {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
				logFile.Close()
			})
			return url
		}
		_ = cmd.Process.Kill()
		<-exited
		logFile.Close()
		out, _ := os.ReadFile(logFile.Name())
		t.Logf("Prometheus on %s did not become ready:\n%s", addr, out)
	}
	t.Fatal("Prometheus did not start")
	return ""
}

// waitReady polls /-/ready until it answers 200 (true) or the process exits (false).
func waitReady(url string, exited <-chan error) bool {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// TestPrometheusSource runs a real Prometheus server against a script of known samples and
// checks the series the source reads back, then the annotations a cycle writes from them.
func TestPrometheusSource(t *testing.T) {
	bin := prometheusBinary(t)

	// The script: a sample every 15 s. The statistics window is the last 8 samples; the 24
	// before them give rate()'s 5-minute range full coverage from the window's first point.
	const step = 15 * time.Second
	const lead, window = 24, 8
	memGiB := []float64{2, 4, 4, 4, 5, 5, 7, 9} // mean 5, population std 2 (see TestSummarize)
	end := time.Now().Add(-time.Minute).Truncate(time.Second)
	exp := &exposition{}
	start := end.Add(-time.Duration(lead+window-1) * step)
	for i := range lead + window {
		at := start.Add(time.Duration(i) * step)
		exp.times = append(exp.times, at)
		mem := 1.0 // GiB, before the window
		if i >= lead {
			mem = memGiB[i-lead]
		}
		exp.memory = append(exp.memory, mem*(1<<30))
		// Each cpu idles 0.75 s per second: the default query gives 2 * 0.75 * 1000 = 1500
		// millicores free.
		exp.idle = append(exp.idle, 1000+0.75*at.Sub(start).Seconds())
	}
	target := httptest.NewServer(exp)
	defer target.Close()
	url := startPrometheus(t, bin, target.Listener.Addr().String())

	// Every sample is stored once the target has been scraped past the script's end.
	deadline := time.Now().Add(2 * time.Minute)
	for exp.scrapes() < len(exp.times)+2 {
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus scraped the target %d times in 2 minutes", exp.scrapes())
		}
		time.Sleep(50 * time.Millisecond)
	}

	src, err := metricsource.NewPrometheus(PrometheusConfig{
		URL: url, CPUQuery: DefaultCPUQuery, MemoryQuery: DefaultMemoryQuery, NodeLabel: DefaultNodeLabel,
		Window: time.Duration(window-1) * step, Step: step, Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	// n1 is the target's host (instance 127.0.0.1:port, matched by address without the port);
	// n2 is unknown to Prometheus.
	n1 := kubeletNode("n1", "4", "16Gi").Address(corev1.NodeInternalIP, "127.0.0.1").Obj()
	n2 := kubeletNode("n2", "4", "16Gi").Annotation(nodestats.MeanFreeMemory, "42").Obj()
	nodes := []*corev1.Node{n1, n2}

	var series map[string]NodeSeries
	var problems map[string]string
	for {
		// The head block makes the last samples queryable within moments; poll for them.
		series, problems, err = src.Series(context.Background(), nodes, end)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := series["n1"]; ok && len(s.Memory) == window && len(s.CPU) == window {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the window never filled: series %v, problems %v", series, problems)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(problems) != 0 {
		t.Errorf("problems: %v", problems)
	}
	if _, ok := series["n2"]; ok {
		t.Errorf("n2 has a series though Prometheus knows nothing of it")
	}
	wantMem := make([]float64, window)
	for i, g := range memGiB {
		wantMem[i] = g * (1 << 30)
	}
	if diff := cmp.Diff(wantMem, series["n1"].Memory); diff != "" {
		t.Errorf("free memory (-want +got):\n%s", diff)
	}
	for i, v := range series["n1"].CPU {
		if math.Abs(v-1500) > 1e-6 {
			t.Errorf("free cpu sample %d = %v, want 1500", i, v)
		}
	}

	// Through a cycle: n1 gets its statistics, n2 (missing in Prometheus) keeps its own.
	cfg := defaults(t)
	cfg.Source = SourcePrometheus
	cfg.Prometheus.URL = url
	cfg.Window, cfg.Prometheus.Step = time.Duration(window-1)*step, step
	r := newRig(t, cfg, nil, nil, n1, n2)
	r.a.source = src
	r.hook.Reset()
	res := r.a.Cycle(context.Background(), end)
	if !res.Statistics || res.BadData != 1 {
		t.Errorf("result %+v, want statistics with one node of bad data (n2)", res)
	}
	forecast, err := Summarize(wantMem, 1, cfg.Holt)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		nodestats.MeanFreeCPU: "1500", nodestats.StdFreeCPU: "0", nodestats.ForcastedFreeCPU: "1500",
		nodestats.MeanFreeMemory: "5368709120", nodestats.StdFreeMemory: "2147483648", nodestats.ForcastedFreeMemory: nodestats.FormatAmount(forecast.Forecast),
		nodestats.StatisticsTimestamp:    end.UTC().Format(time.RFC3339),
		nodestats.StatisticsRequestedCPU: "0", nodestats.StatisticsRequestedMemory: "0",
		nodestats.StatisticsWindow: nodestats.FormatWindow(cfg.Window),
	}
	if diff := cmp.Diff(want, statsOnly(r.node(t, "n1").Annotations)); diff != "" {
		t.Errorf("n1 annotations (-want +got):\n%s", diff)
	}
	if got := r.node(t, "n2").Annotations[nodestats.MeanFreeMemory]; got != "42" {
		t.Errorf("n2's mean-free-memory = %q, want it left at 42", got)
	}
	var warned []string
	for _, e := range r.hook.AllEntries() {
		if e.Level == logrus.WarnLevel {
			warned = append(warned, fmt.Sprint(e.Data["node"]))
		}
	}
	if diff := cmp.Diff([]string{"n2"}, warned); diff != "" {
		t.Errorf("nodes warned about (-want +got):\n%s", diff)
	}

	// A Prometheus that does not answer fails the source as a whole.
	down, _ := metricsource.NewPrometheus(PrometheusConfig{URL: "http://127.0.0.1:1", CPUQuery: DefaultCPUQuery,
		MemoryQuery: DefaultMemoryQuery, NodeLabel: DefaultNodeLabel, Window: time.Minute, Step: step, Timeout: time.Second})
	if _, _, err := down.Series(context.Background(), nodes, end); err == nil {
		t.Error("an unreachable Prometheus gave no error")
	}
}
