package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The descheduler (sigs.k8s.io/descheduler) evicts pods that placement could not keep off a
// node: RemovePodsViolatingNodeAffinity for TAS's <policy>=violating labels, LowNodeUtilization
// on actual usage (docs/operations.md, "Descheduler").
//
// It is pinned here, not in e2e/go.mod as kwok is: its go.mod has a replace directive (so `go
// install module@version` refuses it) and it is built against k8s.io 0.36 while e2e/go.mod
// replaces every k8s.io module by 0.37; as a tool of e2e it would be built with the wrong
// client libraries. BuildDescheduler builds it as its own main module, with its own go.mod and
// go.sum, exactly as its release is built.
const (
	DeschedulerModule  = "sigs.k8s.io/descheduler"
	DeschedulerVersion = "v0.36.0"
	deschedulerPackage = "./cmd/descheduler"
)

// BuildDescheduler makes sure the descheduler is in .cache/descheduler/ (under the repository
// root) at DeschedulerVersion, building it from the Go module proxy when it is missing or its
// stamp differs (as BuildKwok does for kwok), and returns its path. The module's source is
// downloaded into the module cache and built there as the main module (read only: the build
// writes only the binary and the build cache).
func BuildDescheduler(ctx context.Context, progress io.Writer) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cache := filepath.Join(root, ".cache", "descheduler")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(cache, ".build.lock"), progress)
	if err != nil {
		return "", err
	}
	defer unlock()
	goVersion, err := goOutput(ctx, cache, "env", "GOVERSION")
	if err != nil {
		return "", err
	}
	stamp := fmt.Sprintf("package %s\nmodule %s %s\ngo %s\n", deschedulerPackage, DeschedulerModule, DeschedulerVersion, goVersion)
	bin := filepath.Join(cache, "descheduler")
	if old, err := os.ReadFile(bin + ".stamp"); err == nil && string(old) == stamp {
		if _, err := os.Stat(bin); err == nil {
			return bin, nil
		}
	}
	fmt.Fprintf(progress, "harness: building the descheduler from %s %s into %s\n", DeschedulerModule, DeschedulerVersion, cache)
	dir, err := downloadModule(ctx, cache, DeschedulerModule, DeschedulerVersion)
	if err != nil {
		return "", err
	}
	// The version its own Makefile stamps (descheduler --version).
	flags := "-X " + DeschedulerModule + "/pkg/version.version=" + DeschedulerVersion
	start := time.Now()
	if err := goBuild(ctx, dir, "descheduler", bin, flags, deschedulerPackage, progress); err != nil {
		return "", err
	}
	fmt.Fprintf(progress, "harness: built the descheduler in %s\n", time.Since(start).Round(time.Second))
	return bin, os.WriteFile(bin+".stamp", []byte(stamp), 0o644)
}

// downloadModule fetches module@version into the module cache (through GOPROXY) and returns the
// directory of its source. It runs outside any module (GOWORK and GOFLAGS cleared) so that no
// go.mod of this repository takes part.
func downloadModule(ctx context.Context, dir, module, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GO111MODULE=on")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr == nil && info.Error != "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %v: %s", module, version, err, strings.TrimSpace(stderr.String()))
	}
	if info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: no directory in its answer: %s", module, version, out)
	}
	return info.Dir, nil
}

// DeschedulerOptions are how StartDescheduler runs the descheduler.
type DeschedulerOptions struct {
	// Policy is the DeschedulerPolicy (YAML), e.g. the chart's rendered policy.yaml.
	Policy []byte
	// Kubeconfig is whom it runs as (default: the cluster's admin), e.g. KubeconfigFor the
	// chart's service account, so that its RBAC is what is checked.
	Kubeconfig string
	// Interval is its --descheduling-interval.
	Interval time.Duration
}

// StartDescheduler builds the descheduler if needed (BuildDescheduler) and runs it against the
// cluster with opts, in a loop every opts.Interval; it is stopped when t's cleanups run. Its
// metrics and health endpoint listen on a free loopback port (tests run in parallel).
func (c *Cluster) StartDescheduler(t T, opts DeschedulerOptions) *Process {
	t.Helper()
	bin, err := BuildDescheduler(t.Context(), os.Stderr)
	if err != nil {
		t.Fatalf("building the descheduler: %v", err)
	}
	if opts.Interval <= 0 {
		t.Fatalf("StartDescheduler: Interval %v, want > 0", opts.Interval)
	}
	kubeconfig := opts.Kubeconfig
	if kubeconfig == "" {
		kubeconfig = c.Kubeconfig
	}
	dir, err := os.MkdirTemp(c.Dir, "descheduler-")
	if err != nil {
		t.Fatalf("%v", err)
	}
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, opts.Policy, 0o644); err != nil {
		t.Fatalf("%v", err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return StartProcess(t, "descheduler", c.logDir, bin, nil,
		"--policy-config-file="+policy,
		"--kubeconfig="+kubeconfig,
		"--descheduling-interval="+opts.Interval.String(),
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir="+dir,
		"--v=3",
	)
}

// HelmVersion is the Helm release that renders the chart, in the e2e tests and in the lab
// (the descheduler's policy), built into .cache/helm/<version>/helm.
const HelmVersion = "v3.22.0"

// Helm makes sure helm HelmVersion is in .cache/helm/ (building it from the Go module proxy
// when it is missing) and returns its path.
func Helm(ctx context.Context, progress io.Writer) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, ".cache", "helm", HelmVersion)
	return builtOnce(filepath.Join(dir, "helm"), progress, func(bin string) error {
		fmt.Fprintf(progress, "harness: building helm %s into %s\n", HelmVersion, dir)
		cmd := exec.CommandContext(ctx, "go", "install", "helm.sh/helm/v3/cmd/helm@"+HelmVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go install helm.sh/helm/v3/cmd/helm@%s: %v\n%s", HelmVersion, err, out)
		}
		return nil
	})
}

// builtOnce returns bin, calling build(bin) first when it is missing, under a lock in its
// directory so that concurrent tests and checkouts build it once: for a tool whose path names its
// version (no stamp to compare, unlike BuildKwok's).
func builtOnce(bin string, progress io.Writer, build func(bin string) error) (string, error) {
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	dir := filepath.Dir(bin)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(dir, ".build.lock"), progress)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := build(bin); err != nil {
		return "", err
	}
	return bin, nil
}

// ChartDescheduler is what the chart (charts/kube-safe-scheduler) renders for the descheduler.
type ChartDescheduler struct {
	// Policy is its policy.yaml (the DeschedulerPolicy).
	Policy []byte
	// RBAC is the YAML of its ServiceAccount, ClusterRole and ClusterRoleBinding.
	RBAC []byte
	// Interval is its Deployment's --descheduling-interval.
	Interval time.Duration
}

// DeschedulerFromChart picks the descheduler's objects (release kss) out of rendered, the
// output of helm template of the chart with descheduler.enabled.
func DeschedulerFromChart(rendered []byte) (ChartDescheduler, error) {
	var out ChartDescheduler
	objs, err := ReadObjects(rendered)
	if err != nil {
		return out, err
	}
	var rbac []string
	for _, o := range objs {
		if o.GetName() != "kss-descheduler" {
			continue
		}
		switch o.GetKind() {
		case "ConfigMap":
			data, _ := o.Object["data"].(map[string]any)
			p, _ := data["policy.yaml"].(string)
			out.Policy = []byte(p)
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding":
			b, err := yaml.Marshal(o.Object)
			if err != nil {
				return out, err
			}
			rbac = append(rbac, string(b))
		case "Deployment":
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				args, _, _ := unstructured.NestedStringSlice(c.(map[string]any), "args")
				for _, a := range args {
					if v, ok := strings.CutPrefix(a, "--descheduling-interval="); ok {
						if out.Interval, err = time.ParseDuration(v); err != nil {
							return out, fmt.Errorf("the descheduler's %s: %v", a, err)
						}
					}
				}
			}
		}
	}
	if len(out.Policy) == 0 || len(rbac) != 3 || out.Interval <= 0 {
		return out, fmt.Errorf("the render has no kss-descheduler ConfigMap with policy.yaml, or not its 3 RBAC objects (%d), or no Deployment with --descheduling-interval", len(rbac))
	}
	out.RBAC = []byte(strings.Join(rbac, "---\n"))
	return out, nil
}

// RenderChartDescheduler renders the chart (RenderChart) with descheduler.enabled and sets and
// returns its descheduler.
func RenderChartDescheduler(ctx context.Context, helm string, sets ...string) (ChartDescheduler, error) {
	out, err := RenderChart(ctx, helm, append([]string{"descheduler.enabled=true"}, sets...)...)
	if err != nil {
		return ChartDescheduler{}, err
	}
	return DeschedulerFromChart(out)
}

// RenderChart renders the chart (helm template, release kss in kube-system, for the Kubernetes
// release the tests run) with sets (key=value, as --set takes them).
func RenderChart(ctx context.Context, helm string, sets ...string) ([]byte, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	args := []string{"template", "kss", filepath.Join(root, "charts", "kube-safe-scheduler"), "--namespace", "kube-system",
		"--kube-version", "v1.37.1"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return RunHelm(ctx, helm, args...)
}

// RunHelm runs helm with args, with HOME and Helm's directories in a temporary directory, and
// returns its standard output.
func RunHelm(ctx context.Context, helm string, args ...string) ([]byte, error) {
	home, err := os.MkdirTemp("", "helm-home-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	cmd := exec.CommandContext(ctx, helm, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}
