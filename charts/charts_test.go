// Package charts holds the tests of the operators' kit shipped in charts/kube-safe-scheduler:
// the Prometheus rules (promtool check and unit tests, every alert tested, every series one the
// code exports) and the Grafana dashboard's JSON. The chart's Helm tests and the end-to-end
// checks against a real Prometheus are in e2e/ops_*_test.go.
package charts

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kube-safe-scheduler/extender/agents"
)

const files = "kube-safe-scheduler/files"

// promtool finds promtool (Debian's prometheus package ships it; hack/install-prometheus.sh
// installs it). Without it the test is skipped, unless REQUIRE_PROMETHEUS is set (make test
// sets it), when it fails.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROMTOOL_BIN"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if os.Getenv("REQUIRE_PROMETHEUS") != "" {
		t.Fatal("no promtool (PROMTOOL_BIN or promtool on PATH); run hack/install-prometheus.sh")
	}
	t.Skip("no promtool (PROMTOOL_BIN or promtool on PATH); run hack/install-prometheus.sh")
	return ""
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(files, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The rules pass promtool's check and its unit tests.
func TestPromtool(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{
		{"check", "rules", "alerts.rules.yaml"},
		{"test", "rules", "alerts.tests.yaml"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = files
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

func matches(re, text string) []string {
	var out []string
	for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// Every alert has a unit test that expects it to fire.
func TestEveryAlertTested(t *testing.T) {
	alerts := matches(`(?m)^\s*- alert: (\S+)`, read(t, "alerts.rules.yaml"))
	if len(alerts) == 0 {
		t.Fatal("no alert in alerts.rules.yaml")
	}
	tests := read(t, "alerts.tests.yaml")
	// An alertname whose test case lists at least one expected alert.
	fired := matches(`(?m)^\s*alertname: (\S+)\n\s*exp_alerts:\n\s*- exp_labels`, tests)
	for _, a := range alerts {
		if !slices.Contains(fired, a) {
			t.Errorf("alert %s has no unit test in alerts.tests.yaml that expects it to fire", a)
		}
	}
}

// kubeSchedulerSeries are the series the rules read from kube-scheduler itself (client-go's
// leader election, the framework's plugin metrics), not from this project's code.
var kubeSchedulerSeries = []string{"leader_election_master_status", "scheduler_plugin_execution_duration_seconds",
	"scheduler_framework_extension_point_duration_seconds", "scheduler_schedule_attempts_total"}

// ourSeries are the names of the series read by text (rules, dashboard queries): identifiers of
// this project's metric families, histogram suffixes removed.
func ourSeries(text string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\b((?:extender|safe|telemetry|reward|scheduler|leader|node_annotator)_[a-z0-9_]+)\b`).FindAllStringSubmatch(text, -1) {
		name := m[1]
		for _, s := range []string{"_bucket", "_count", "_sum"} {
			if strings.HasSuffix(name, s) && strings.Contains(name, "_seconds") {
				name = strings.TrimSuffix(name, s)
			}
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// goSources returns every Go source of the module outside tests, concatenated.
func goSources(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "e2e" || d.Name() == "scheduler" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			s, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b.Write(s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Every series the rules and the dashboard read is one the code exports (its name is a string
// in a Go source: the registration), or kube-scheduler's own.
func TestSeriesExist(t *testing.T) {
	src := goSources(t)
	for _, f := range []string{"alerts.rules.yaml", "dashboard.json"} {
		text := read(t, f)
		names := ourSeries(text)
		if len(names) == 0 {
			t.Errorf("%s reads no series", f)
		}
		for _, n := range names {
			if !slices.Contains(kubeSchedulerSeries, n) && !strings.Contains(src, `"`+n+`"`) {
				t.Errorf("%s reads %s, which no Go source of the module registers", f, n)
			}
		}
	}
}

// The plugin-mode alert names exactly the plugins of this project: every agent function
// (plugin mode names a plugin after its function), agents (the plugin that runs several of them,
// scheduler/adapter's CombinedName) and the gang plugins.
func TestPluginAlertNamesEveryPlugin(t *testing.T) {
	want := []string{"agents", "pod-group", "group-priority"}
	for _, r := range agents.All {
		want = append(want, r.Filters...)
		for _, p := range r.Prioritizers {
			want = append(want, p.Name)
		}
	}
	sort.Strings(want)
	want = slices.Compact(want)
	res := matches(`plugin=~"([^"]+)"`, read(t, "alerts.rules.yaml"))
	if len(res) != 1 {
		t.Fatalf("want one plugin=~ matcher in the rules, got %v", res)
	}
	got := strings.Split(res[0], "|")
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("the plugin alert names %v, want %v", got, want)
	}
}

// The dashboard is valid JSON whose every panel has at least one query.
func TestDashboardJSON(t *testing.T) {
	var d struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(read(t, "dashboard.json")), &d); err != nil {
		t.Fatal(err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard without title, uid or panels: %+v", d)
	}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" {
				t.Errorf("panel %q has an empty query", p.Title)
			}
		}
	}
}
