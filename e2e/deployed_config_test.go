package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	allagents "github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// TestGeneratedConfigAsDeployed (issue 49): what `extender config` prints, run as a user deploys
// it, beside a default kube-scheduler that runs with its default leader election (the Lease
// kube-system/kube-scheduler), on one control plane:
//   - every agent alone and all of them together, in extender mode with --sidecars --node-cache
//     (the sidecars run as processes with their generated command, env and probes, ports
//     remapped, the scheduler with the generated configuration in the shipped Deployment's
//     kube-scheduler container), --bind where an agent binds, and reward without --bind too;
//     and in plugin mode (--mode plugin, in the shipped kube-safe-scheduler Deployment);
//   - every shipped deployment (yamlfiles/extender.*.yaml, scheduler.*.yaml) whose
//     configuration declares a bindVerb.
//
// Each scheduler leads on its own Lease (kube-system/<its scheduler name>) and binds a pod of its
// own; where its configuration declares a bindVerb, the binding went through the extender (the
// binding sidecar counts one more bind answered 200). Meanwhile the default scheduler keeps its
// Lease (the same holderIdentity, no transition, from before the first generated scheduler
// starts to after the last one stops) and binds a pod of default-scheduler after each.
//
// The pods are plain ones, which every agent lets through on nodes the template agent allows:
// gang's filter judges only pods of a PodGroup (its CRD is applied), and in extender mode
// telemetry's extender is called only for pods requesting telemetry/scheduling (its
// managedResources), so there its sidecar is checked to start, answer its probes and take no
// foreign Lease, and the scheduler to bind pods not subject to it; telemetry has no metrics
// source here (nothing serves the custom metrics API), which a plain pod, carrying no policy,
// does not need. The identity is the cluster admin's: RBAC is the shipped files' business
// (TestYAMLFiles*, the least-privilege test), the generated configuration's Lease is the shipped
// files' one (internal/deploygen/schedconfig's TestShippedFilesMatchTable).
func TestGeneratedConfigAsDeployed(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t)
	for _, crd := range []string{"podgroup-crd.yaml", "telemetry-policy-crd.yaml"} {
		c.ApplyCRDFile(t, filepath.Join(repoRoot(t), "yamlfiles", crd))
	}
	allowed := map[string]string{templateLabel: "true"}
	c.CreateNodes(t,
		harness.NodeSpec{Name: "n1", Labels: allowed},
		harness.NodeSpec{Name: "n2", Labels: allowed},
		harness.NodeSpec{Name: "n3", Labels: allowed},
	)
	bin := harness.BuildExtender(t, "all")

	// The default scheduler: no profiles, no leaderElection, as kube-scheduler runs in a
	// cluster (kubeadm's static pod adds only the kubeconfig).
	c.StartScheduler(t, harness.SchedulerOptions{Name: "kube-scheduler default",
		Config: []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")})
	defaultLease := waitForLease(t, c, "kube-scheduler")
	t.Logf("the default scheduler holds kube-system/kube-scheduler as %s", *defaultLease.Spec.HolderIdentity)
	keepsItsLease := func(t *testing.T) {
		t.Helper()
		l, err := c.Client.CoordinationV1().Leases("kube-system").Get(t.Context(), "kube-scheduler", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the default scheduler's Lease: %v", err)
		}
		if holder, was := holderOf(l), holderOf(defaultLease); holder != was ||
			transitionsOf(l) != transitionsOf(defaultLease) {
			t.Errorf("kube-system/kube-scheduler is held by %q after %d transitions; the default scheduler held it as %q after %d",
				holder, transitionsOf(l), was, transitionsOf(defaultLease))
		}
	}

	type deployed struct {
		name string
		// args of `extender config` (with --scheduler-name name), or the shipped file.
		args    []string
		plugin  bool
		shipped string
	}
	var cases []deployed
	var every []string
	for _, r := range allagents.All {
		every = append(every, r.Name)
		args := []string{"--agents", r.Name, "--node-cache", "--sidecars"}
		if r.Bind {
			cases = append(cases, deployed{name: "ext-" + r.Name + "-nobind", args: args})
			args = append(args, "--bind")
		}
		cases = append(cases,
			deployed{name: "ext-" + r.Name, args: args},
			deployed{name: "plugin-" + r.Name, args: []string{"--agents", r.Name, "--mode", "plugin"}, plugin: true})
	}
	all := strings.Join(every, ",")
	cases = append(cases,
		deployed{name: "ext-all", args: []string{"--agents", all, "--node-cache", "--sidecars", "--bind"}},
		deployed{name: "plugin-all", args: []string{"--agents", all, "--mode", "plugin"}, plugin: true})
	shippedFiles, _ := filepath.Glob(filepath.Join(repoRoot(t), "yamlfiles", "extender.*.yaml"))
	plugins, _ := filepath.Glob(filepath.Join(repoRoot(t), "yamlfiles", "scheduler.*.yaml"))
	binders := 0
	for _, f := range append(shippedFiles, plugins...) {
		d := loadDeployment(t, filepath.Base(f))
		if len(bindVerbs(t, d.SchedulerConfig)) > 0 {
			binders++
			cases = append(cases, deployed{name: "shipped-" + filepath.Base(f), shipped: filepath.Base(f)})
		}
	}
	if binders == 0 {
		t.Error("no shipped file declares a bindVerb: extender.reward.yaml binds")
	}

	// RunDeployment writes the scheduler's configuration to one path per cluster: one start
	// at a time, so that each kube-scheduler has read its own before the next is written.
	var starting sync.Mutex
	t.Run("beside the default scheduler", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				var d harness.Deployment
				switch {
				case tc.shipped != "":
					d = *loadDeployment(t, tc.shipped)
				case tc.plugin:
					d = *loadDeployment(t, pluginsFile)
				default:
					d = *loadDeployment(t, "extender.template.yaml")
				}
				if tc.shipped == "" {
					args := append([]string{"config", "--scheduler-name", tc.name}, tc.args...)
					config, sidecars := generatedDeployment(t, bin, args...)
					d.Source, d.SchedulerConfig, d.Sidecars = "extender "+strings.Join(args, " "), config, sidecars
				}
				name, lease := profileAndLease(t, d.SchedulerConfig)
				if lease != name || name == "kube-scheduler" || name == "default-scheduler" {
					t.Fatalf("%s: profile %s leads on kube-system/%s: want its own Lease, named after it", d.Source, name, lease)
				}
				starting.Lock()
				r := c.RunDeployment(t, &d, harness.RunOptions{})
				starting.Unlock()
				r.CheckProbes(t)
				waitForLease(t, c, lease)

				// The extender a bindVerb calls, and how many binds it has answered.
				var binder *harness.Extender
				for _, port := range bindVerbs(t, d.SchedulerConfig) {
					for _, sc := range d.Sidecars {
						if p, _ := harness.SidecarPort(sc); p == port {
							binder = r.Extenders[sc.Name]
						}
					}
					if binder == nil {
						t.Fatalf("%s: bindVerb on port %d, which no sidecar serves", d.Source, port)
					}
				}
				before := 0
				if binder != nil {
					before = extenderBinds(t, binder)
				}
				pod := tc.name + "-pod"
				node := schedule(t, c, harness.PodSpec{Name: pod, SchedulerName: name, CPU: "100m"})
				how := "kube-scheduler's binder"
				if binder != nil {
					if n := extenderBinds(t, binder); n != before+1 {
						t.Errorf("%s: %s answered %d binds with 200 while the scheduler bound %s (from %d to %d): the bindVerb did not bind it",
							d.Source, binder.Name, n-before, pod, before, n)
					}
					how = binder.Name + "'s bind verb"
				}
				t.Logf("%s: %s leads on kube-system/%s and bound %s to %s through %s", d.Source, name, lease, pod, node, how)
				c.CreatePod(t, harness.PodSpec{Name: tc.name + "-default", CPU: "100m"})
				c.WaitForBinding(t, "default", tc.name+"-default")
				keepsItsLease(t)
			})
		}
	})
	keepsItsLease(t)
}

// generatedDeployment runs `extender <args>` (config --sidecars or --mode plugin) and returns the
// scheduler configuration and the sidecar containers it prints.
func generatedDeployment(t *testing.T, bin string, args ...string) ([]byte, []corev1.Container) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("extender %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	docs := strings.SplitN(stdout.String(), "\n---\n", 2)
	if len(docs) == 1 {
		return []byte(docs[0]), nil
	}
	var side struct {
		Containers []corev1.Container `json:"containers"`
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &side); err != nil {
		t.Fatalf("extender %s: the sidecars: %v\n%s", strings.Join(args, " "), err, docs[1])
	}
	for _, sc := range side.Containers {
		if _, err := harness.SidecarPort(sc); err != nil {
			t.Fatalf("extender %s: %v", strings.Join(args, " "), err)
		}
	}
	return []byte(docs[0]), side.Containers
}

// profileAndLease returns a configuration's one profile name and the name of the Lease it leads
// on in kube-system (kube-scheduler's defaults when it does not say).
func profileAndLease(t *testing.T, config []byte) (profile, lease string) {
	t.Helper()
	var cfg struct {
		LeaderElection struct {
			LeaderElect       *bool  `json:"leaderElect"`
			ResourceNamespace string `json:"resourceNamespace"`
			ResourceName      string `json:"resourceName"`
		} `json:"leaderElection"`
		Profiles []struct {
			SchedulerName string `json:"schedulerName"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(config, &cfg); err != nil {
		t.Fatal(err)
	}
	profile, lease = "default-scheduler", "kube-scheduler"
	if len(cfg.Profiles) > 0 {
		profile = cfg.Profiles[0].SchedulerName
	}
	le := cfg.LeaderElection
	if le.LeaderElect != nil && !*le.LeaderElect {
		t.Fatalf("leader election is off: two replicas would both schedule\n%s", config)
	}
	if le.ResourceName != "" {
		lease = le.ResourceName
	}
	if ns := le.ResourceNamespace; ns != "" && ns != "kube-system" {
		t.Fatalf("the Lease is in %s: the shipped Role is in kube-system", ns)
	}
	return profile, lease
}

// bindVerbs returns the ports of the extenders a configuration's bindVerb calls.
func bindVerbs(t *testing.T, config []byte) []int {
	t.Helper()
	var cfg struct {
		Extenders []struct {
			URLPrefix string `json:"urlPrefix"`
			BindVerb  string `json:"bindVerb"`
		} `json:"extenders"`
	}
	if err := yaml.Unmarshal(config, &cfg); err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range cfg.Extenders {
		if e.BindVerb == "" {
			continue
		}
		m := regexp.MustCompile(`^https?://(localhost|127\.0\.0\.1):(\d+)/`).FindStringSubmatch(e.URLPrefix)
		if m == nil {
			t.Fatalf("bindVerb on %s: not a sidecar of the pod", e.URLPrefix)
		}
		port, _ := strconv.Atoi(m[2])
		out = append(out, port)
	}
	return out
}

// extenderBinds returns how many bind requests an extender answered with 200 (extender_requests_total,
// verb bind, summed over its agents).
func extenderBinds(t *testing.T, e *harness.Extender) int {
	t.Helper()
	_, body, err := e.Get(t.Context(), "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range regexp.MustCompile(`(?m)^extender_requests_total\{([^}]*)\} (\d+)$`).FindAllSubmatch(body, -1) {
		labels := string(m[1])
		if harness.LabelValue(labels, "verb") == "bind" && harness.LabelValue(labels, "code") == "200" {
			v, _ := strconv.Atoi(string(m[2]))
			n += v
		}
	}
	return n
}

// waitForLease waits until kube-system/name has a holder and returns it.
func waitForLease(t *testing.T, c *harness.Cluster, name string) *coordinationv1.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		l, err := c.Client.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
		if err == nil && holderOf(l) != "" {
			return l
		}
		select {
		case <-ctx.Done():
			t.Fatalf("kube-system/%s has no holder after a minute (%v): its scheduler does not lead", name, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// holderOf returns a Lease's holderIdentity, "" when none.
func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// transitionsOf returns a Lease's leaseTransitions, 0 when unset.
func transitionsOf(l *coordinationv1.Lease) int32 {
	if l.Spec.LeaseTransitions == nil {
		return 0
	}
	return *l.Spec.LeaseTransitions
}
