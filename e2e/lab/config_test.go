package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// TestScaledSettings: the annotator's and the sidecars' periods and rates are the shipped ones
// in simulated time.
func TestScaledSettings(t *testing.T) {
	rc := RunConfig{Speed: 60}
	env := annotatorEnv(rc, "http://127.0.0.1:9090")
	for k, want := range map[string]string{
		"STATS_INTERVAL": "1s", "STATS_WINDOW": "15s", "STATS_REFRESH": "30s", "PROMETHEUS_STEP": "1s",
		"INTERVAL":  "1s", // 0.5 s, raised to the annotator's 1 s minimum
		"PATCH_QPS": "1200", "KUBE_API_QPS": "1200",
	} {
		if env[k] != want {
			t.Errorf("annotator %s = %q, want %q", k, env[k], want)
		}
	}
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	d, err := harness.LoadDeploymentFile(filepath.Join(root, "yamlfiles", "extender.reward.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	se := sidecarEnv(rc, d, map[string]map[string]string{"reward": {"LOG_LEVEL": "DEBUG"}})
	r := se["reward"]
	// The shipped file sets REWARD_START_TIMEOUT 5m and REWARD_MTTF 600s.
	if r["REWARD_START_TIMEOUT"] != "5s" || r["REWARD_MTTF"] != "10s" || r["KUBE_API_QPS"] != "1200" || r["LOG_LEVEL"] != "DEBUG" {
		t.Errorf("reward sidecar env %v", r)
	}
	if got := rc.real(time.Hour); got != time.Minute {
		t.Errorf("an hour at speed 60 is %v real, want 1m", got)
	}
}

// TestKeepPlugins: plugins-safe runs the shipped plugin configuration with only the safe row's
// plugins (under the profile of safe-scheduler), and refuses a plugin the file does not enable.
func TestKeepPlugins(t *testing.T) {
	root, _ := harness.RepoRoot()
	d, err := harness.LoadDeploymentFile(filepath.Join(root, "yamlfiles", "scheduler.plugins.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := findScheduler("plugins-safe")
	k, err := keepPlugins(d, s.Plugins)
	if err != nil {
		t.Fatal(err)
	}
	name, err := profileName(k.SchedulerConfig)
	if err != nil || name != "safe-scheduler" {
		t.Errorf("profile %q, %v", name, err)
	}
	if _, err := keepPlugins(d, []string{"no-such-plugin"}); err == nil {
		t.Error("a plugin the file does not enable was accepted")
	}
}

// TestGangTimeoutsScaled: plugins-gang's pod-group waits the shipped 60 s in simulated time (3 s
// real at 20x, never below 1 s), and files without a gang plugin are left as they are.
func TestGangTimeoutsScaled(t *testing.T) {
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	d, err := harness.LoadDeploymentFile(filepath.Join(root, "yamlfiles", "scheduler.plugins.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for speed, want := range map[float64]string{20: "defaultScheduleTimeoutSeconds: 3\n", 600: "defaultScheduleTimeoutSeconds: 1\n", 1: "defaultScheduleTimeoutSeconds: 60\n"} {
		scaled, err := scaleGangTimeouts(d, RunConfig{Speed: speed})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(scaled.SchedulerConfig), want) {
			t.Errorf("speed %v: configuration lacks %q:\n%s", speed, want, scaled.SchedulerConfig)
		}
	}
	if !strings.Contains(string(d.SchedulerConfig), "defaultScheduleTimeoutSeconds: 60") {
		t.Errorf("the shipped file changed under scaling")
	}
	pigeon, err := harness.LoadDeploymentFile(filepath.Join(root, "yamlfiles", "extender.pigeon.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	same, err := scaleGangTimeouts(pigeon, RunConfig{Speed: 20})
	if err != nil || strings.Contains(string(same.SchedulerConfig), "ScheduleTimeout") {
		t.Errorf("a file without gang plugins: %v\n%s", err, same.SchedulerConfig)
	}
}

// TestWeightsAndRequestScores: the variants' edits of a shipped file change what they name, and
// a weight for a verb the file lacks is an error.
func TestWeightsAndRequestScores(t *testing.T) {
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	d, err := harness.LoadDeploymentFile(filepath.Join(root, "yamlfiles", "extender.safe.congestion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := setWeights(d, map[string]int{"priorities/safe-balance": 3})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(w.SchedulerConfig), "prioritizeVerb: priorities/safe-balance\n  urlPrefix: http://localhost:5401/scheduler\n  weight: 3") {
		t.Errorf("safe-balance's weight not 3:\n%s", w.SchedulerConfig)
	}
	if _, err := setWeights(d, map[string]int{"priorities/nothing": 3}); err == nil {
		t.Error("a weight for a verb the file lacks was accepted")
	}
	u, err := disableRequestScores(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(u.SchedulerConfig), "score:\n      disabled:\n      - name: NodeResourcesFit\n      - name: NodeResourcesBalancedAllocation") {
		t.Errorf("request scores not disabled:\n%s", u.SchedulerConfig)
	}
}

// TestDefaultOnlyRunsByDefault: -only narrows -schedulers, so a scheduler that the default
// pairing names but the default list leaves out never runs under make eval (pigeon-fewest did
// not, until this test).
func TestDefaultOnlyRunsByDefault(t *testing.T) {
	def := map[string]bool{}
	for _, n := range strings.Split(defaultSchedulers, ",") {
		if _, err := findScheduler(n); err != nil {
			t.Errorf("defaultSchedulers: %v", err)
		}
		def[n] = true
	}
	for _, part := range strings.Split(defaultOnly, ";") {
		w, list, _ := strings.Cut(part, "=")
		for _, n := range strings.Split(list, ",") {
			if !def[n] {
				t.Errorf("defaultOnly runs %s on %s, but defaultSchedulers leaves it out", n, w)
			}
		}
	}
}
