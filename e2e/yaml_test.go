package e2e

import (
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
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

// extenderFiles are the deployment files, each with the agents its sidecars serve.
var extenderFiles = map[string][]string{
	"extender.safe.yaml":            {"safe"},
	"extender.congestion.yaml":      {"congestion"},
	"extender.pigeon.yaml":          {"pigeon"},
	"extender.template.yaml":        {"template"},
	"extender.reward.yaml":          {"reward"},
	"extender.safe.congestion.yaml": {"safe", "congestion"},
	"extender.safe.pigeon.yaml":     {"safe", "pigeon"},
}

// TestExtenderFilesShape checks what the deployment files promise beyond validation: every
// extender.*.yaml file of yamlfiles/ is known here; its scheduler profile is my-scheduler with
// leader election on; the scheduler image matches the control plane the tests run; each sidecar
// is one agent's image on its own port, and each extender entry calls, on localhost, a route its
// sidecar serves.
func TestExtenderFilesShape(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(repoRoot(t), "yamlfiles", "extender.*.yaml"))
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	for name := range extenderFiles {
		if !slices.Contains(names, name) {
			t.Errorf("yamlfiles/%s is missing", name)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			agents, ok := extenderFiles[name]
			if !ok {
				t.Fatalf("yamlfiles/%s has no scenario in this test suite; add it to extenderFiles", name)
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
			routes := map[string][]string{} // port -> routes served there
			var served []string
			for _, sc := range d.Sidecars {
				port, _ := harness.SidecarPort(sc)
				tags, err := harness.ImageTags(sc.Image)
				if err != nil {
					t.Fatal(err)
				}
				if len(tags) != 1 || tags[0] != sc.Name {
					t.Errorf("sidecar %s runs image %s built with tags %v; want the image of agent %s", sc.Name, sc.Image, tags, sc.Name)
				}
				served = append(served, sc.Name)
				routes[strconv.Itoa(port)] = agentRoutes(t)[sc.Name]
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
				for _, verb := range []string{e.FilterVerb, e.PrioritizeVerb} {
					if verb != "" && !slices.Contains(routes[u.Port()], verb) {
						t.Errorf("extender %s calls %s, which the sidecar on port %s does not serve (it serves %v)", e.URLPrefix, verb, u.Port(), routes[u.Port()])
					}
				}
			}
		})
	}
}
