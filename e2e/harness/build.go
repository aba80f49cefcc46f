package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Module is the extender's Go module path; RepoRoot looks for the go.mod declaring it.
const Module = "github.com/kube-safe-scheduler/extender"

// ExtenderVersion is the version stamped into the extender binaries BuildExtender builds.
const ExtenderVersion = "v0.0.0-e2e"

// RepoRoot returns the extender repository's root: the nearest directory, from the working
// directory upwards, whose go.mod declares module Module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && f[1] == Module {
					return dir, nil
				}
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod declaring module %s in the working directory or above it", Module)
		}
		dir = parent
	}
}

// CacheDir returns the git-ignored directory (.cache/bin under the repository root) that holds
// the control plane binaries, creating it when missing.
func CacheDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, ".cache", "bin")
	return dir, os.MkdirAll(dir, 0o755)
}

// Binaries are the paths of the control plane's executables.
type Binaries struct {
	Etcd      string
	APIServer string
	Scheduler string
}

// component is one control plane executable built from a Go package of a pinned module.
type component struct {
	name   string // file name in the cache
	pkg    string // Go package to build
	module string // module whose version e2e/go.mod pins
}

var components = []component{
	{name: "etcd", pkg: "go.etcd.io/etcd/server/v3", module: "go.etcd.io/etcd/server/v3"},
	{name: "kube-apiserver", pkg: "k8s.io/kubernetes/cmd/kube-apiserver", module: "k8s.io/kubernetes"},
	{name: "kube-scheduler", pkg: "k8s.io/kubernetes/cmd/kube-scheduler", module: "k8s.io/kubernetes"},
}

// ldflags returns the linker flags that make a Kubernetes binary report its release (a plain
// go build reports v0.0.0-master).
func ldflags(module, version string) string {
	if module != "k8s.io/kubernetes" {
		return ""
	}
	major, minor := "", ""
	if parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3); len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags,
			"-X "+pkg+".gitVersion="+version,
			"-X "+pkg+".gitMajor="+major,
			"-X "+pkg+".gitMinor="+minor,
			"-X "+pkg+".gitTreeState=clean")
	}
	return strings.Join(flags, " ")
}

var (
	controlPlaneMu  sync.Mutex
	controlPlaneBin *Binaries
)

// ControlPlane returns the control plane binaries, building the missing or outdated ones first
// (see BuildControlPlane; progress goes to standard error). It calls t.Fatalf when a build
// fails. Within one process the check is done once.
func ControlPlane(t T) Binaries {
	t.Helper()
	controlPlaneMu.Lock()
	defer controlPlaneMu.Unlock()
	if controlPlaneBin != nil {
		return *controlPlaneBin
	}
	b, err := BuildControlPlane(t.Context(), os.Stderr)
	if err != nil {
		t.Fatalf("building the control plane: %v", err)
	}
	controlPlaneBin = &b
	return b
}

// BuildControlPlane makes sure etcd, kube-apiserver and kube-scheduler are in CacheDir at the
// versions e2e/go.mod pins, and returns their paths. A binary is rebuilt when it is missing or
// when its stamp file (<name>.stamp: package, version, Go version, linker flags) differs from
// what the build would record, e.g. after the pinned version changed. Builds run inside e2e/
// with the Go module proxy; the first one takes several minutes and reports progress to
// progress. A file lock serializes builds of overlapping runs.
func BuildControlPlane(ctx context.Context, progress io.Writer) (Binaries, error) {
	root, err := RepoRoot()
	if err != nil {
		return Binaries{}, err
	}
	cache, err := CacheDir()
	if err != nil {
		return Binaries{}, err
	}
	e2eDir := filepath.Join(root, "e2e")

	unlock, err := lockFile(filepath.Join(cache, ".build.lock"), progress)
	if err != nil {
		return Binaries{}, err
	}
	defer unlock()

	goVersion, err := goOutput(ctx, e2eDir, "env", "GOVERSION")
	if err != nil {
		return Binaries{}, err
	}
	for _, c := range components {
		version, err := goOutput(ctx, e2eDir, "list", "-m", "-f", "{{.Version}}", c.module)
		if err != nil {
			return Binaries{}, fmt.Errorf("version of %s pinned in e2e/go.mod: %w", c.module, err)
		}
		flags := ldflags(c.module, version)
		stamp := fmt.Sprintf("package %s\nmodule %s %s\ngo %s\nldflags %s\n", c.pkg, c.module, version, goVersion, flags)
		bin := filepath.Join(cache, c.name)
		if old, err := os.ReadFile(bin + ".stamp"); err == nil && string(old) == stamp {
			if _, err := os.Stat(bin); err == nil {
				continue
			}
		}
		fmt.Fprintf(progress, "harness: building %s from %s %s into %s (the first build takes several minutes)\n",
			c.name, c.module, version, cache)
		if err := goBuild(ctx, e2eDir, c.name, bin, flags, c.pkg, progress); err != nil {
			return Binaries{}, err
		}
		if err := os.WriteFile(bin+".stamp", []byte(stamp), 0o644); err != nil {
			return Binaries{}, err
		}
	}
	return Binaries{
		Etcd:      filepath.Join(cache, "etcd"),
		APIServer: filepath.Join(cache, "kube-apiserver"),
		Scheduler: filepath.Join(cache, "kube-scheduler"),
	}, nil
}

// goBuild builds pkg into out (through a temporary file, so that a half-written binary is never
// used), printing a progress line every 30 s.
func goBuild(ctx context.Context, dir, name, out, flags, pkg string, progress io.Writer) error {
	tmp := out + ".tmp"
	args := []string{"build", "-v", "-o", tmp}
	if flags != "" {
		args = append(args, "-ldflags", flags)
	}
	args = append(args, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	var (
		mu       sync.Mutex
		packages int
		tail     []string
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			packages++
			tail = append(tail, sc.Text())
			if len(tail) > 40 {
				tail = tail[1:]
			}
			mu.Unlock()
		}
	}()
	ticker := time.NewTicker(30 * time.Second)
	defer ticker.Stop()
	waitErr := make(chan error, 1)
	go func() { <-done; waitErr <- cmd.Wait() }()
	for {
		select {
		case <-ticker.C:
			mu.Lock()
			n := packages
			mu.Unlock()
			fmt.Fprintf(progress, "harness: building %s: %d packages compiled, %s elapsed\n", name, n, time.Since(start).Round(time.Second))
		case err := <-waitErr:
			if err != nil {
				os.Remove(tmp)
				mu.Lock()
				defer mu.Unlock()
				return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, strings.Join(tail, "\n"))
			}
			fmt.Fprintf(progress, "harness: built %s in %s\n", name, time.Since(start).Round(time.Second))
			return os.Rename(tmp, out)
		}
	}
}

// goOutput runs the go command in dir and returns its trimmed standard output.
func goOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// lockFile takes an exclusive lock on path, waiting for other holders, and returns its release.
func lockFile(path string, progress io.Writer) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, err
		}
		fmt.Fprintf(progress, "harness: waiting for another build (lock %s)\n", path)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, err
		}
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

var (
	extenderMu    sync.Mutex
	extenderBuilt = map[string]string{}
)

// BuildExtender builds the extender (the repository's main package) with the given build tags
// (for example "template", or "safe", "congestion"), stamped with ExtenderVersion, and returns
// the binary's path, under .cache/extender/. Within one process each tag set is built once;
// t.Fatalf reports a failed build.
func BuildExtender(t T, tags ...string) string {
	t.Helper()
	tags = slices.Clone(tags)
	slices.Sort(tags)
	tags = slices.Compact(tags)
	key := strings.Join(tags, ",")

	extenderMu.Lock()
	defer extenderMu.Unlock()
	if bin, ok := extenderBuilt[key]; ok {
		return bin
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatalf("%v", err)
	}
	name := strings.Join(tags, "-")
	if name == "" {
		name = "none"
	}
	dir := filepath.Join(root, ".cache", "extender", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	tmp, err := os.CreateTemp(dir, "extender-*.tmp")
	if err != nil {
		t.Fatalf("%v", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	args := []string{"build", "-tags", key, "-ldflags", "-X main.version=" + ExtenderVersion, "-o", tmp.Name(), "."}
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), root, err, out)
	}
	bin := filepath.Join(dir, "extender")
	if err := os.Rename(tmp.Name(), bin); err != nil {
		t.Fatalf("%v", err)
	}
	extenderBuilt[key] = bin
	return bin
}

var (
	pluginSchedulerMu  sync.Mutex
	pluginSchedulerBin string
)

// BuildPluginScheduler builds the scheduler with the agents as framework plugins (the module in
// scheduler/, as make build-scheduler does, stamped with the Kubernetes release it is built
// from and ExtenderVersion) into .cache/scheduler/kube-safe-scheduler and returns its path.
// Within one process it is built once; go's build cache makes later builds quick. t.Fatalf
// reports a failed build.
func BuildPluginScheduler(t T) string {
	t.Helper()
	pluginSchedulerMu.Lock()
	defer pluginSchedulerMu.Unlock()
	if pluginSchedulerBin != "" {
		return pluginSchedulerBin
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatalf("%v", err)
	}
	src := filepath.Join(root, "scheduler")
	version, err := goOutput(t.Context(), src, "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes")
	if err != nil {
		t.Fatalf("the Kubernetes release scheduler/go.mod builds: %v", err)
	}
	dir := filepath.Join(root, ".cache", "scheduler")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	bin := filepath.Join(dir, PluginScheduler)
	// The stamp makes --version (and the scheduler's emulated version) that release's, like the
	// harness's kube-scheduler, with this build's version after "+".
	flags := strings.ReplaceAll(ldflags("k8s.io/kubernetes", version), "gitVersion="+version, "gitVersion="+version+"+safe."+ExtenderVersion)
	fmt.Fprintf(os.Stderr, "harness: building %s in %s (the first build takes several minutes)\n", PluginScheduler, src)
	if err := goBuild(t.Context(), src, PluginScheduler, bin, flags, ".", os.Stderr); err != nil {
		t.Fatalf("%v", err)
	}
	pluginSchedulerBin = bin
	return bin
}

var (
	labSchedulerMu  sync.Mutex
	labSchedulerBin string
)

// BuildLabScheduler builds the quality lab's scheduler, kube-scheduler with the lab's Trimaran
// plugins (e2e/lab/scheduler), stamped with the Kubernetes release e2e/go.mod pins, into
// .cache/scheduler/lab-scheduler and returns its path. Within one process it is built once.
// t.Fatalf reports a failed build.
func BuildLabScheduler(t T) string {
	t.Helper()
	labSchedulerMu.Lock()
	defer labSchedulerMu.Unlock()
	if labSchedulerBin != "" {
		return labSchedulerBin
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatalf("%v", err)
	}
	src := filepath.Join(root, "e2e")
	version, err := goOutput(t.Context(), src, "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes")
	if err != nil {
		t.Fatalf("the Kubernetes release e2e/go.mod pins: %v", err)
	}
	dir := filepath.Join(root, ".cache", "scheduler")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	bin := filepath.Join(dir, "lab-scheduler")
	fmt.Fprintf(os.Stderr, "harness: building lab-scheduler in %s\n", src)
	if err := goBuild(t.Context(), src, "lab-scheduler", bin, ldflags("k8s.io/kubernetes", version), "./lab/scheduler", os.Stderr); err != nil {
		t.Fatalf("%v", err)
	}
	labSchedulerBin = bin
	return bin
}
