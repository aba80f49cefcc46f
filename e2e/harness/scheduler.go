package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Scheduler is a running kube-scheduler.
type Scheduler struct {
	*Process
	// Port is its secure port (health checks, metrics) on 127.0.0.1.
	Port int
	// ConfigPath is the KubeSchedulerConfiguration file it was started with.
	ConfigPath string
}

// SchedulerOptions configure StartScheduler.
type SchedulerOptions struct {
	// Name tells schedulers apart in logs (default "kube-scheduler").
	Name string
	// Config is a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1, YAML or JSON),
	// used as is except clientConnection.kubeconfig, which the harness sets to Kubeconfig.
	Config []byte
	// Kubeconfig the scheduler connects with; default: the cluster's admin kubeconfig.
	Kubeconfig string
	// Args are further kube-scheduler flags (e.g. "--v=4"), after the harness's --config,
	// --secure-port and --bind-address.
	Args []string
	// Binary is the scheduler executable; default: the control plane's kube-scheduler
	// (BuildPluginScheduler builds the one with the agents as plugins).
	Binary string
	// Env are further environment variables (NAME=value), e.g. kube-safe-scheduler's
	// DECISIONS_KEPT.
	Env []string
}

// StartScheduler starts kube-scheduler with opts.Config (its kubeconfig path changed) on a free
// secure port on 127.0.0.1, waits until its /healthz answers ok and returns it. It is stopped
// when t's cleanups run. Leader election runs as configured: a fresh cluster has no holder, so
// the scheduler leads at once.
func (c *Cluster) StartScheduler(t T, opts SchedulerOptions) *Scheduler {
	t.Helper()
	name := opts.Name
	if name == "" {
		name = "kube-scheduler"
	}
	kubeconfig := opts.Kubeconfig
	if kubeconfig == "" {
		kubeconfig = c.Kubeconfig
	}
	cfg, err := SetSchedulerKubeconfig(opts.Config, kubeconfig)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	path := filepath.Join(c.Dir, strings.ReplaceAll(name, " ", "-")+"-config.yaml")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		t.Fatalf("%v", err)
	}
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // its own self-signed certificate on loopback
	for attempt := 1; ; attempt++ {
		port := MustFreePort(t)
		args := append([]string{
			"--config=" + path,
			"--secure-port=" + strconv.Itoa(port),
			"--bind-address=127.0.0.1",
		}, opts.Args...)
		bin := opts.Binary
		if bin == "" {
			bin = c.Binaries.Scheduler
		}
		p := StartProcess(t, name, c.logDir, bin, opts.Env, args...)
		err := waitUntil(t.Context(), StartTimeout, p, func(ctx context.Context) bool {
			return httpOK(ctx, insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
		})
		if err == nil {
			return &Scheduler{Process: p, Port: port, ConfigPath: path}
		}
		if attempt < 3 && p.Exited() && addressInUse(p) {
			continue
		}
		t.Fatalf("%s: %v\n%s", name, err, p.Tail(30))
	}
}

// SetSchedulerKubeconfig returns the KubeSchedulerConfiguration config with
// clientConnection.kubeconfig set to path and nothing else changed.
func SetSchedulerKubeconfig(config []byte, path string) ([]byte, error) {
	var m map[string]any
	if err := yaml.Unmarshal(config, &m); err != nil {
		return nil, fmt.Errorf("KubeSchedulerConfiguration: %w", err)
	}
	if m == nil || m["kind"] != "KubeSchedulerConfiguration" {
		return nil, fmt.Errorf("not a KubeSchedulerConfiguration (kind %v)", m["kind"])
	}
	cc, _ := m["clientConnection"].(map[string]any)
	if cc == nil {
		cc = map[string]any{}
	}
	cc["kubeconfig"] = path
	m["clientConnection"] = cc
	return yaml.Marshal(m)
}

// RewriteExtenderURLs returns config with each extender's urlPrefix replaced by what rewrite
// returns for it, and nothing else changed.
func RewriteExtenderURLs(config []byte, rewrite func(urlPrefix string) (string, error)) ([]byte, error) {
	var m map[string]any
	if err := yaml.Unmarshal(config, &m); err != nil {
		return nil, fmt.Errorf("KubeSchedulerConfiguration: %w", err)
	}
	exts, _ := m["extenders"].([]any)
	for i, e := range exts {
		ext, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("extenders[%d] is not an object", i)
		}
		url, _ := ext["urlPrefix"].(string)
		nu, err := rewrite(url)
		if err != nil {
			return nil, fmt.Errorf("extenders[%d]: %w", i, err)
		}
		ext["urlPrefix"] = nu
	}
	return yaml.Marshal(m)
}

// LabelValue returns the value of label name in a Prometheus sample's labels (the text between
// its braces), "" when it has none.
func LabelValue(labels, name string) string {
	_, rest, ok := strings.Cut(labels, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}
