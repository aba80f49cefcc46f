package e2e

import (
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// dockerVersion is the VERSION build argument the check passes, as make images would.
const dockerVersion = "v0.0.0-dockerfile-check"

// TestDockerfiles runs, for each file of dockerfiles/, exactly the go build command the file
// runs (read from it; the output path moved to a temporary directory, VERSION given as a build
// argument). For an extender image (Dockerfile.<agent>, Dockerfile.all) it then starts the binary
// and checks /version reports that version and those agents, and that the binary serves exactly
// the routes of those agents. There is no Docker engine here: the rest of each file (base images,
// user, entrypoint) is checked as text. Dockerfile.<agent> and Dockerfile.all are generated from
// the parameterised dockerfiles/Dockerfile (make generate); each builds what that file builds
// with --build-arg AGENT=<agent>.
func TestDockerfiles(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	files, _ := filepath.Glob(filepath.Join(root, "dockerfiles", "Dockerfile.*"))
	if len(files) == 0 {
		t.Fatal("no dockerfiles/Dockerfile.*")
	}
	param, err := harness.ParseDockerfile(filepath.Join(root, "dockerfiles", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimPrefix(filepath.Base(f), "Dockerfile."))
	}
	for _, want := range append(slices.Sorted(maps.Keys(agentRoutes(t))), "all") {
		if !slices.Contains(names, want) {
			t.Errorf("dockerfiles/Dockerfile.%s is missing", want)
		}
	}
	// The extenders run with cluster access, which some agents (telemetry) cannot do without.
	c := harness.StartCluster(t)
	for _, f := range files {
		name := strings.TrimPrefix(filepath.Base(f), "Dockerfile.")
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := harness.ParseDockerfile(f)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "binary")
			env, args := b.Command(map[string]string{"VERSION": dockerVersion}, out)
			if text, _ := os.ReadFile(f); strings.Contains(string(text), "from dockerfiles/Dockerfile with AGENT="+name+" ") {
				penv, pargs := param.Command(map[string]string{"VERSION": dockerVersion, "AGENT": name}, out)
				if !slices.Equal(penv, env) || !slices.Equal(pargs, args) || param.Dir != b.Dir {
					t.Errorf("builds env %v go %v in %s; dockerfiles/Dockerfile with AGENT=%s builds env %v go %v in %s",
						env, args, b.Dir, name, penv, pargs, param.Dir)
				}
			}
			cmd := exec.CommandContext(t.Context(), "go", args...)
			cmd.Dir = filepath.Join(root, b.Dir)
			cmd.Env = append(os.Environ(), env...)
			if outp, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s (in %s) env %v go %v: %v\n%s", b.Line, b.Dir, env, args, err, outp)
			}
			if name == "scheduler" {
				checkSchedulerImage(t, f, b, env, out)
				return
			}
			if b.Dir != "." {
				t.Fatalf("the build runs in %s; an extender image builds at the repository root", b.Dir)
			}
			if args[len(args)-1] != "." {
				return // not an extender image (e.g. the node annotator): building is the check
			}

			text, _ := os.ReadFile(f)
			for _, line := range []string{
				"FROM golang:1.26 AS build", "ARG VERSION=dev", "FROM gcr.io/distroless/static-debian12:nonroot",
				"USER nonroot:nonroot", `ENTRYPOINT ["/extender"]`, "COPY --from=build /out/extender /extender",
			} {
				if !strings.Contains(string(text), line+"\n") {
					t.Errorf("no line %q", line)
				}
			}
			if !slices.Contains(env, "CGO_ENABLED=0") {
				t.Errorf("the build does not set CGO_ENABLED=0: the binary would not be static")
			}
			if b.Output != "/out/extender" {
				t.Errorf("the build writes %s, not the /out/extender the final stage copies", b.Output)
			}

			all := agentRoutes(t)
			agents := []string{name}
			if name == "all" {
				agents = slices.Sorted(maps.Keys(all))
			}
			if _, known := all[name]; !known && name != "all" {
				t.Fatalf("Dockerfile.%s builds an agent the extender built with -tags all does not serve", name)
			}
			requireAgents(t, agents...)
			if want := []string{name}; !slices.Equal(b.Tags, want) {
				t.Errorf("build tags %v, want %v", b.Tags, want)
			}
			ext := harness.StartExtender(t, harness.ExtenderOptions{Name: "extender " + name, Binary: out,
				Args: []string{"--kubeconfig=" + c.Kubeconfig}})
			v, err := ext.Version(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if v.Version != dockerVersion || !slices.Equal(v.Agents, agents) {
				t.Errorf("/version says version %q, agents %v; want %q, %v", v.Version, v.Agents, dockerVersion, agents)
			}
			body, _ := json.Marshal(extenderv1.ExtenderArgs{
				Pod:   &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u"}},
				Nodes: &corev1.NodeList{Items: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n"}}}},
			})
			for agent, routes := range all {
				for _, route := range routes {
					status, answer, err := ext.Post(t.Context(), "/scheduler/"+route, body)
					if err != nil {
						t.Fatal(err)
					}
					want := http.StatusNotFound
					if slices.Contains(agents, agent) {
						want = http.StatusOK
					}
					if status != want {
						t.Errorf("POST /scheduler/%s (agent %s): status %d, want %d: %s", route, agent, status, want, answer)
					}
				}
			}
		})
	}
}

// checkSchedulerImage checks Dockerfile.scheduler beyond its build: it builds the scheduler
// module (scheduler/) at the Kubernetes release scheduler/go.mod requires, which --version
// reports with the image's VERSION, and the rest of the file is what the other images have.
func checkSchedulerImage(t *testing.T, file string, b *harness.DockerBuild, env []string, binary string) {
	t.Helper()
	if b.Dir != "scheduler" {
		t.Errorf("the build runs in %s, want scheduler (the plugin scheduler's module)", b.Dir)
	}
	list := exec.CommandContext(t.Context(), "go", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes")
	list.Dir = filepath.Join(repoRoot(t), "scheduler")
	kube, err := list.Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/kubernetes in scheduler/: %v", err)
	}
	if want := strings.TrimSpace(string(kube)); b.ArgDefaults["KUBERNETES_VERSION"] != want {
		t.Errorf("ARG KUBERNETES_VERSION=%s, but scheduler/go.mod builds k8s.io/kubernetes %s", b.ArgDefaults["KUBERNETES_VERSION"], want)
	}
	out, err := exec.CommandContext(t.Context(), binary, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", binary, err, out)
	}
	if want := "Kubernetes " + b.ArgDefaults["KUBERNETES_VERSION"] + "+safe." + dockerVersion + "\n"; string(out) != want {
		t.Errorf("--version says %q, want %q", out, want)
	}
	text, _ := os.ReadFile(file)
	for _, line := range []string{
		"FROM golang:1.26 AS build", "ARG VERSION=dev", "FROM gcr.io/distroless/static-debian12:nonroot",
		"USER nonroot:nonroot", `ENTRYPOINT ["/kube-safe-scheduler"]`, "COPY --from=build /out/kube-safe-scheduler /kube-safe-scheduler",
	} {
		if !strings.Contains(string(text), line+"\n") {
			t.Errorf("no line %q", line)
		}
	}
	if !slices.Contains(env, "CGO_ENABLED=0") {
		t.Errorf("the build does not set CGO_ENABLED=0: the binary would not be static")
	}
	if b.Output != "/out/kube-safe-scheduler" {
		t.Errorf("the build writes %s, not the /out/kube-safe-scheduler the final stage copies", b.Output)
	}
}
