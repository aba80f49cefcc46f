package e2e

import (
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// TestYAMLFilesDryRun applies every file of yamlfiles/ to a real API server with a server-side
// dry run and strict field validation: each object must validate and pass admission.
func TestYAMLFilesDryRun(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "yamlfiles", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no yamlfiles/*.yaml: %v", err)
	}
	c := harness.StartCluster(t)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			objs := c.ApplyFile(t, f, true)
			if len(objs) == 0 {
				t.Fatal("no object in the file")
			}
		})
	}
}

// extenderFiles are the deployment files serving several agents or a variant, each with the
// agents its sidecars serve; extender.<agent>.yaml runs <agent>, and every agent has one.
var extenderFiles = map[string][]string{
	"extender.safe.congestion.yaml": {"safe", "congestion"},
	"extender.safe.pigeon.yaml":     {"safe", "pigeon"},
	"extender.safe.mtls.yaml":       {"safe"},
	// one sidecar, image all, AGENTS=safe,congestion, with priorities/combined
	"extender.safe.congestion.combined.yaml": {"safe", "congestion"},
}

// TestExtenderFilesShape checks what the deployment files promise beyond validation: every
// extender.*.yaml file of yamlfiles/ is known here; its scheduler profile is my-scheduler with
// leader election on; the scheduler image matches the control plane the tests run; each sidecar
// is one agent's image on its own port (or the image of every agent, serving those its AGENTS
// names), and each extender entry calls, on localhost or 127.0.0.1, a route its sidecar serves;
// an entry calling priorities/combined has the sum of COMBINED_PRIORITIES' weights as weight.
func TestExtenderFilesShape(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(repoRoot(t), "yamlfiles", "extender.*.yaml"))
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	want := slices.Collect(maps.Keys(extenderFiles))
	for agent := range agentRoutes(t) {
		want = append(want, "extender."+agent+".yaml")
	}
	for _, name := range want {
		if !slices.Contains(names, name) {
			t.Errorf("yamlfiles/%s is missing", name)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			agents, ok := extenderFiles[name]
			if !ok {
				// extender.<agent>.yaml, for an agent with its build-tagged file (<agent>.go at
				// the root), runs that agent.
				agent := strings.TrimSuffix(strings.TrimPrefix(name, "extender."), ".yaml")
				if _, err := os.Stat(filepath.Join(repoRoot(t), agent+".go")); strings.Contains(agent, ".") || err != nil {
					t.Fatalf("yamlfiles/%s: add the agents its sidecars serve to extenderFiles", name)
				}
				agents = []string{agent}
			}
			d := loadDeployment(t, name)
			if d.Deployment.Namespace != "kube-system" {
				t.Errorf("Deployment in namespace %q, want kube-system", d.Deployment.Namespace)
			}
			if want := "registry.k8s.io/kube-scheduler:v1.37.1"; d.Scheduler.Image != want {
				t.Errorf("scheduler image %s, want %s (the version the e2e control plane runs)", d.Scheduler.Image, want)
			}
			var cfg struct {
				LeaderElection struct {
					LeaderElect *bool `json:"leaderElect"`
				} `json:"leaderElection"`
				Profiles []struct {
					SchedulerName string `json:"schedulerName"`
				} `json:"profiles"`
				Extenders []struct {
					URLPrefix      string `json:"urlPrefix"`
					FilterVerb     string `json:"filterVerb"`
					PrioritizeVerb string `json:"prioritizeVerb"`
					Weight         int64  `json:"weight"`
				} `json:"extenders"`
			}
			// Unknown fields are the scheduler's business: it rejects them when it starts.
			if err := yaml.Unmarshal(d.SchedulerConfig, &cfg); err != nil {
				t.Fatal(err)
			}
			if cfg.LeaderElection.LeaderElect == nil || !*cfg.LeaderElection.LeaderElect {
				t.Error("leader election is not on")
			}
			if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != schedulerName {
				t.Errorf("profiles %+v, want one named %s", cfg.Profiles, schedulerName)
			}
			routes := map[string][]string{}      // port -> routes served there
			combinedWeight := map[string]int64{} // port -> sum of COMBINED_PRIORITIES' weights
			var served []string
			for _, sc := range d.Sidecars {
				port, _ := harness.SidecarPort(sc)
				tags, err := harness.ImageTags(sc.Image)
				if err != nil {
					t.Fatal(err)
				}
				agents := []string{sc.Name}
				if list, ok := harness.EnvValue(sc, "AGENTS"); ok && slices.Equal(tags, []string{"all"}) {
					agents = strings.Split(list, ",")
				} else if len(tags) != 1 || tags[0] != sc.Name {
					t.Errorf("sidecar %s runs image %s built with tags %v; want the image of agent %s (or image all with AGENTS)", sc.Name, sc.Image, tags, sc.Name)
				}
				p := strconv.Itoa(port)
				for _, a := range agents {
					served = append(served, a)
					routes[p] = append(routes[p], agentRoutes(t)[a]...)
				}
				if spec, ok := harness.EnvValue(sc, "COMBINED_PRIORITIES"); ok && spec != "" {
					routes[p] = append(routes[p], "priorities/combined")
					for _, item := range strings.Split(spec, ",") {
						name, weight, _ := strings.Cut(item, "=")
						w, err := strconv.ParseInt(weight, 10, 64)
						if err != nil || !slices.Contains(routes[p], "priorities/"+name) {
							t.Errorf("sidecar %s: COMBINED_PRIORITIES item %q: want name=weight with a priority its agents serve", sc.Name, item)
						}
						combinedWeight[p] += w
					}
				}
				// Loopback only: the scheduler shares the pod's network namespace.
				if v, _ := harness.EnvValue(sc, "HTTP_PORT"); !strings.HasPrefix(v, "127.0.0.1:") {
					t.Errorf("sidecar %s listens on HTTP_PORT %q, want 127.0.0.1:<port>", sc.Name, v)
				}
			}
			slices.Sort(served)
			want := slices.Clone(agents)
			slices.Sort(want)
			if !slices.Equal(served, want) {
				t.Errorf("sidecars %v, want %v", served, want)
			}
			for _, e := range cfg.Extenders {
				u, err := url.Parse(e.URLPrefix)
				if err != nil || u.Hostname() != "localhost" || u.Path != "/scheduler" {
					t.Errorf("urlPrefix %s: want http://localhost:<port>/scheduler", e.URLPrefix)
					continue
				}
				if e.PrioritizeVerb == "priorities/combined" && e.Weight != combinedWeight[u.Port()] {
					t.Errorf("extender %s calls priorities/combined with weight %d; want %d, the sum of its COMBINED_PRIORITIES' weights", e.URLPrefix, e.Weight, combinedWeight[u.Port()])
				}
				for _, verb := range []string{e.FilterVerb, e.PrioritizeVerb} {
					if verb != "" && !slices.Contains(routes[u.Port()], verb) {
						t.Errorf("extender %s calls %s, which the sidecar on port %s does not serve (it serves %v)", e.URLPrefix, verb, u.Port(), routes[u.Port()])
					}
				}
			}
		})
	}
}
