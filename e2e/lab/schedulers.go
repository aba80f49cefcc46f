package main

import (
	"fmt"
	"math"
	"slices"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// Scheduler is one scheduler the lab compares: either kube-scheduler with a configuration of
// its own (Config), or a deployment file of yamlfiles/ run as the harness runs it (File, with
// Env overriding sidecar variables and, for the plugin scheduler, Plugins keeping only those
// of its multiPoint plugins).
type Scheduler struct {
	Name    string
	About   string
	Config  string
	File    string
	Env     map[string]map[string]string
	Plugins []string
	// Annotator overrides durations of the node annotator's configuration (annotatorEnv), in
	// simulated time: variants of the statistics safe reads.
	Annotator map[string]time.Duration
	// DefaultScoring drops the profile's pluginConfig (extender.pigeon.yaml's MostAllocated), as
	// its header says to for LOAD_BALANCE.
	DefaultScoring bool
	// Weights overrides the weights of the file's extenders, by prioritizeVerb.
	Weights map[string]int
	// NoRequestScores disables the profile's scores of requests (NodeResourcesFit,
	// NodeResourcesBalancedAllocation), as Trimaran's TargetLoadPacking configuration does.
	NoRequestScores bool
	// Learner runs the node annotator's usage learner (learnerEnv) and safe with
	// SAFE_ESTIMATE=learned: pods are estimated at their workload's learned usage.
	Learner bool
	// Trimaran runs Config with the lab's scheduler (e2e/lab/scheduler: kube-scheduler with
	// the lab's restatement of Trimaran's plugins), reading the lab's Prometheus (trimaranEnv).
	Trimaran bool
	// Plan runs Config with the lab's scheduler too, told the run's plan (planFor, through the
	// file LAB_PLAN names): the reference schedulers, whose plugins (e2e/lab/reference) know
	// what the plan says of the pods' usage.
	Plan bool
	// Descheduler runs the real descheduler (sigs.k8s.io/descheduler) beside the scheduler with
	// the chart's policy for the metrics server (LowNodeUtilization on actual usage, thresholds
	// from safe's), reading the lab's usage through a metrics.k8s.io server (startDescheduler);
	// the lab recreates each pod it evicts, as the pod's controller would.
	Descheduler bool
}

// labSchedulerName is the profile of the kube-scheduler configurations below.
const labSchedulerName = "lab-scheduler"

const configHead = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: lab-scheduler
`

func pigeon(objective string) map[string]map[string]string {
	return map[string]map[string]string{"pigeon": {"POLICY_OBJECTIVE": objective}}
}

// Schedulers are every scheduler the lab knows, in table order.
var Schedulers = []Scheduler{
	{Name: "defaults", About: "kube-scheduler v1.37 defaults (NodeResourcesFit LeastAllocated + BalancedAllocation...)", Config: configHead},
	{Name: "most-allocated", About: "kube-scheduler, NodeResourcesFit MostAllocated (cpu, memory)", Config: configHead + `  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 1
        - name: memory
          weight: 1
`},
	{Name: "balanced", About: "kube-scheduler, NodeResourcesBalancedAllocation the only score", Config: configHead + `  plugins:
    score:
      disabled:
      - name: '*'
      enabled:
      - name: NodeResourcesBalancedAllocation
        weight: 1
`},
	{Name: "trimaran-tlp", About: "scheduler-plugins' Trimaran TargetLoadPacking (target 40 %, 1.5 x requests) replacing LeastAllocated and BalancedAllocation, as its sample configuration; 15 min statistics from Prometheus every minute",
		Trimaran: true, Config: configHead + `  plugins:
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
      - name: NodeResourcesFit
      enabled:
      - name: TargetLoadPacking
  pluginConfig:
  - name: TargetLoadPacking
    args:
      targetUtilization: 40
      defaultRequestsMultiplier: "1.5"
`},
	{Name: "trimaran-lvrb", About: "scheduler-plugins' Trimaran LoadVariationRiskBalancing (margin 1, sensitivity 1) beside the default scores, as its sample configuration; 15 min statistics from Prometheus every minute",
		Trimaran: true, Config: configHead + `  plugins:
    score:
      enabled:
      - name: LoadVariationRiskBalancing
  pluginConfig:
  - name: LoadVariationRiskBalancing
    args:
      safeVarianceMargin: 1
      safeVarianceSensitivity: 1
`},
	{Name: "oracle", About: "reference, not a product: clairvoyant greedy placement (knows every pod's usage over its life from the run's plan, pods already placed included); each pod where it adds the least overload volume above 90 %, then the lowest peak; fitting by requests as kube-scheduler does",
		Plan: true, Config: configHead + `  plugins:
    score:
      disabled:
      - name: '*'
      enabled:
      - name: LabOracle
        weight: 1
    reserve:
      enabled:
      - name: LabOracle
`},
	{Name: "workload-level", About: "reference, not a product: knows each workload's true mean usage per pod (from the run's plan) and puts each pod where the highest of cpu and memory, counted at those means, stays lowest; fitting by requests",
		Plan: true, Config: configHead + `  plugins:
    score:
      disabled:
      - name: '*'
      enabled:
      - name: LabWorkloadLevel
        weight: 1
`},
	{Name: "safe", About: "extender: yamlfiles/extender.safe.congestion.yaml as shipped", File: "extender.safe.congestion.yaml"},
	{Name: "defaults+descheduler", About: "kube-scheduler v1.37 defaults, and the descheduler's LowNodeUtilization on actual usage with the chart's policy (over 90 % is over-used, under 60 % has room; one eviction per node per run, every 2 min)",
		Config: configHead, Descheduler: true},
	{Name: "safe+descheduler", About: "safe (yamlfiles/extender.safe.congestion.yaml), and the descheduler as in defaults+descheduler",
		File: "extender.safe.congestion.yaml", Descheduler: true},
	{Name: "safe-learn", About: "safe with the annotator's usage learner on (reading the lab's Prometheus) and SAFE_ESTIMATE=learned: a pod's demand is its workload's learned p90 usage, not its request (issue 37)",
		File: "extender.safe.congestion.yaml", Learner: true, Env: map[string]map[string]string{"safe": {"SAFE_ESTIMATE": "learned", "SAFE_ESTIMATE_NAMESPACE": "kube-system"}}},
	{Name: "safe-learn-usage", About: "safe-learn with kube-scheduler's scores of requests (NodeResourcesFit, BalancedAllocation) disabled (issue 51)",
		File: "extender.safe.congestion.yaml", Learner: true, Env: learnedSafe(nil), NoRequestScores: true},
	{Name: "safe-learn-relative", About: "safe-learn with safe-balance's scores relative to the candidates (SAFE_BALANCE_SCALE=relative) (issue 51)",
		File: "extender.safe.congestion.yaml", Learner: true, Env: learnedSafe(map[string]string{"SAFE_BALANCE_SCALE": "relative"})},
	{Name: "safe-learn-bal3", About: "safe-learn with safe-balance weighing 3 instead of 1 (issue 51)",
		File: "extender.safe.congestion.yaml", Learner: true, Env: learnedSafe(nil), Weights: map[string]int{"priorities/safe-balance": 3}},
	{Name: "safe-learn-p50", About: "safe-learn with pods estimated at their workload's learned p50 (SAFE_ESTIMATE_PERCENTILE=50) instead of p90 (issue 51)",
		File: "extender.safe.congestion.yaml", Learner: true, Env: learnedSafe(map[string]string{"SAFE_ESTIMATE_PERCENTILE": "50"})},
	{Name: "safe-learn-e10", About: "safe-learn with acceptable risk 10 % instead of 30 % (SAFEPERCENTILE=10), in the filter and the overload score (issue 51)",
		File: "extender.safe.congestion.yaml", Learner: true, Env: learnedSafe(map[string]string{"SAFEPERCENTILE": "10"})},
	{Name: "safe-learn-tuned", About: "safe-learn without kube-scheduler's request scores, safe-balance relative and weighing 3 (issue 51)",
		File: "extender.safe.congestion.yaml", Learner: true, Env: learnedSafe(map[string]string{"SAFE_BALANCE_SCALE": "relative"}),
		NoRequestScores: true, Weights: map[string]int{"priorities/safe-balance": 3}},
	{Name: "safe-arrivals", About: "safe, SAFE_PLACED=arrivals: the pods placed since the statistics counted, not the growth of the requests",
		File: "extender.safe.congestion.yaml", Env: map[string]map[string]string{"safe": {"SAFE_PLACED": "arrivals"}}},
	{Name: "safe-w6h", About: "safe with the annotator's statistics over 6 h every 5 min (its defaults before 2026-11-26) instead of 15 min every minute",
		File: "extender.safe.congestion.yaml", Annotator: map[string]time.Duration{"STATS_WINDOW": 6 * time.Hour, "STATS_INTERVAL": 5 * time.Minute}},
	{Name: "safe-w30m", About: "safe with statistics over 30 min instead of 15 min (every minute, as shipped)",
		File: "extender.safe.congestion.yaml", Annotator: map[string]time.Duration{"STATS_WINDOW": 30 * time.Minute}},
	{Name: "safe-f100", About: "safe with the annotator's forecast (Holt, one step) taken as the free amount (SAFEFORECASTWEIGHT 100 instead of 20)",
		File: "extender.safe.congestion.yaml", Env: map[string]map[string]string{"safe": {"SAFEFORECASTWEIGHT": "100"}}},
	{Name: "safe-f50", About: "safe with the forecast weighed half against the window's mean (SAFEFORECASTWEIGHT 50 instead of 20)",
		File: "extender.safe.congestion.yaml", Env: map[string]map[string]string{"safe": {"SAFEFORECASTWEIGHT": "50"}}},
	{Name: "safe-relative", About: "safe with safe-balance's scores relative to the candidates (SAFE_BALANCE_SCALE=relative): the least used node 10, the most used 0",
		File: "extender.safe.congestion.yaml", Env: map[string]map[string]string{"safe": {"SAFE_BALANCE_SCALE": "relative"}}},
	{Name: "safe-bal3", About: "safe with safe-balance, the usage-aware balance, weighing 3 instead of 1",
		File: "extender.safe.congestion.yaml", Weights: map[string]int{"priorities/safe-balance": 3}},
	{Name: "safe-usage", About: "safe with kube-scheduler's scores of requests (NodeResourcesFit, BalancedAllocation) disabled, as TargetLoadPacking's configuration does",
		File: "extender.safe.congestion.yaml", NoRequestScores: true},
	{Name: "pigeon-abp", About: "extender: yamlfiles/extender.pigeon.yaml, A_BINPACK", File: "extender.pigeon.yaml", Env: pigeon("A_BINPACK")},
	{Name: "pigeon-lb", About: "extender: yamlfiles/extender.pigeon.yaml, LOAD_BALANCE, its pluginConfig (MostAllocated) removed as the file says",
		File: "extender.pigeon.yaml", Env: pigeon("LOAD_BALANCE"), DefaultScoring: true},
	{Name: "pigeon-cons", About: "extender: yamlfiles/extender.pigeon.yaml, CONSOLIDATE", File: "extender.pigeon.yaml", Env: pigeon("CONSOLIDATE")},
	{Name: "pigeon-fewest", About: "extender: yamlfiles/extender.pigeon.yaml, FEWEST_NODES", File: "extender.pigeon.yaml", Env: pigeon("FEWEST_NODES")},
	{Name: "reward", About: "extender: yamlfiles/extender.reward.yaml as shipped", File: "extender.reward.yaml"},
	{Name: "gang", About: "extender: yamlfiles/extender.gang.yaml as shipped", File: "extender.gang.yaml"},
	{Name: "plugins-gang", About: "plugin mode: yamlfiles/scheduler.plugins.yaml with pod-group only (quorum, all-or-nothing permit, the shipped 60 s timeout in simulated time)",
		File: "scheduler.plugins.yaml", Plugins: []string{"pod-group"}},
	{Name: "plugins-safe", About: "plugin mode: yamlfiles/scheduler.plugins.yaml with safe-overload, safe-balance, congestion (the safe row's agents and weights)",
		File: "scheduler.plugins.yaml", Plugins: []string{"safe-overload", "safe-balance", "congestion"}},
}

// learnedSafe is safe-learn's environment for the safe sidecar (pods estimated at their
// workload's learned usage, read from the learner's ConfigMaps in kube-system) with extra on top.
func learnedSafe(extra map[string]string) map[string]map[string]string {
	env := map[string]string{"SAFE_ESTIMATE": "learned", "SAFE_ESTIMATE_NAMESPACE": "kube-system"}
	for k, v := range extra {
		env[k] = v
	}
	return map[string]map[string]string{"safe": env}
}

func findScheduler(name string) (Scheduler, error) {
	for _, s := range Schedulers {
		if s.Name == name {
			return s, nil
		}
	}
	var names []string
	for _, s := range Schedulers {
		names = append(names, s.Name)
	}
	return Scheduler{}, fmt.Errorf("unknown scheduler %q (known: %v)", name, names)
}

// keepPlugins returns d with its first profile's multiPoint plugins limited to keep.
func keepPlugins(d *harness.Deployment, keep []string) (*harness.Deployment, error) {
	return editProfile(d, func(profile map[string]any) error {
		plugins, _ := profile["plugins"].(map[string]any)
		mp, _ := plugins["multiPoint"].(map[string]any)
		list, _ := mp["enabled"].([]any)
		var enabled []any
		for _, p := range list {
			if m, ok := p.(map[string]any); ok && slices.Contains(keep, fmt.Sprint(m["name"])) {
				enabled = append(enabled, p)
			}
		}
		if len(enabled) != len(keep) {
			return fmt.Errorf("%s does not enable all of %v under multiPoint", d.Source, keep)
		}
		mp["enabled"] = enabled
		return nil
	})
}

// gangTimeouts are the gang plugins' Permit timeouts by plugin name (the fields their users
// know, scheduler/gangplugin/args.go).
var gangTimeouts = map[string]string{"pod-group": "defaultScheduleTimeoutSeconds", "Coscheduling": "permitWaitingTimeSeconds"}

// scaleGangTimeouts returns d with the gang plugins' Permit timeouts of its first profile, which
// are real time, converted from simulated time at rc's speed (the shipped 60 s at 20x: 3 s),
// at least 1 s, so that a group waits what it would in a real cluster.
func scaleGangTimeouts(d *harness.Deployment, rc RunConfig) (*harness.Deployment, error) {
	return editProfile(d, func(profile map[string]any) error {
		configs, _ := profile["pluginConfig"].([]any)
		for _, c := range configs {
			m, _ := c.(map[string]any)
			field, ok := gangTimeouts[fmt.Sprint(m["name"])]
			if !ok {
				continue
			}
			args, _ := m["args"].(map[string]any)
			v, ok := args[field].(float64)
			if !ok {
				return fmt.Errorf("%s: %s has no numeric %s", d.Source, m["name"], field)
			}
			args[field] = max(1, math.Round(v/rc.Speed))
		}
		return nil
	})
}

// setWeights returns d with the weights of its extenders whose prioritizeVerb weights names.
func setWeights(d *harness.Deployment, weights map[string]int) (*harness.Deployment, error) {
	return editConfig(d, func(cfg map[string]any) error {
		extenders, _ := cfg["extenders"].([]any)
		found := 0
		for _, e := range extenders {
			m, _ := e.(map[string]any)
			if w, ok := weights[fmt.Sprint(m["prioritizeVerb"])]; ok {
				m["weight"] = w
				found++
			}
		}
		if found != len(weights) {
			return fmt.Errorf("%s: not every prioritizeVerb of %v is an extender's", d.Source, weights)
		}
		return nil
	})
}

// disableRequestScores returns d with kube-scheduler's scores of requests disabled in its first
// profile.
func disableRequestScores(d *harness.Deployment) (*harness.Deployment, error) {
	return editProfile(d, func(profile map[string]any) error {
		plugins, _ := profile["plugins"].(map[string]any)
		if plugins == nil {
			plugins = map[string]any{}
			profile["plugins"] = plugins
		}
		score, _ := plugins["score"].(map[string]any)
		if score == nil {
			score = map[string]any{}
			plugins["score"] = score
		}
		disabled, _ := score["disabled"].([]any)
		score["disabled"] = append(disabled, map[string]any{"name": "NodeResourcesFit"}, map[string]any{"name": "NodeResourcesBalancedAllocation"})
		return nil
	})
}

// dropPluginConfig returns d with its first profile's pluginConfig removed: kube-scheduler's
// default scoring.
func dropPluginConfig(d *harness.Deployment) (*harness.Deployment, error) {
	return editProfile(d, func(profile map[string]any) error {
		delete(profile, "pluginConfig")
		return nil
	})
}

// editProfile returns a copy of d whose scheduler configuration's first profile edit changed.
func editProfile(d *harness.Deployment, edit func(profile map[string]any) error) (*harness.Deployment, error) {
	return editConfig(d, func(cfg map[string]any) error {
		profiles, _ := cfg["profiles"].([]any)
		if len(profiles) == 0 {
			return fmt.Errorf("%s: no profile", d.Source)
		}
		profile, _ := profiles[0].(map[string]any)
		return edit(profile)
	})
}

// editConfig returns a copy of d whose scheduler configuration edit changed.
func editConfig(d *harness.Deployment, edit func(cfg map[string]any) error) (*harness.Deployment, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(d.SchedulerConfig, &cfg); err != nil {
		return nil, err
	}
	if err := edit(cfg); err != nil {
		return nil, err
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	copied := *d
	copied.SchedulerConfig = out
	return &copied, nil
}

// profileName returns the schedulerName of a configuration's first profile.
func profileName(config []byte) (string, error) {
	var cfg struct {
		Profiles []struct {
			SchedulerName string `json:"schedulerName"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(config, &cfg); err != nil {
		return "", err
	}
	if len(cfg.Profiles) == 0 || cfg.Profiles[0].SchedulerName == "" {
		return "", fmt.Errorf("no profile with a schedulerName")
	}
	return cfg.Profiles[0].SchedulerName, nil
}
