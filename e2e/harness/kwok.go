package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// kwokPackage is kwok's command (sigs.k8s.io/kwok, "Kubernetes WithOut Kubelet"), pinned in
// e2e/go.mod as a tool: it plays the kubelet of fake nodes, moving pods through the states its
// Stages describe.
const (
	kwokPackage = "sigs.k8s.io/kwok/cmd/kwok"
	kwokModule  = "sigs.k8s.io/kwok"
)

// BuildKwok makes sure kwok is in .cache/kwok/ (under the repository root) at the version e2e/go.mod pins, building it (with
// the Go module proxy) when it is missing or its stamp differs, as BuildControlPlane does for
// the control plane, and returns its path.
func BuildKwok(ctx context.Context, progress io.Writer) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	// Not CacheDir: that may be a link to a control plane cache shared by several checkouts.
	cache := filepath.Join(root, ".cache", "kwok")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	e2eDir := filepath.Join(root, "e2e")
	unlock, err := lockFile(filepath.Join(cache, ".build.lock"), progress)
	if err != nil {
		return "", err
	}
	defer unlock()
	goVersion, err := goOutput(ctx, e2eDir, "env", "GOVERSION")
	if err != nil {
		return "", err
	}
	version, err := goOutput(ctx, e2eDir, "list", "-m", "-f", "{{.Version}}", kwokModule)
	if err != nil {
		return "", fmt.Errorf("version of %s pinned in e2e/go.mod: %w", kwokModule, err)
	}
	stamp := fmt.Sprintf("package %s\nmodule %s %s\ngo %s\n", kwokPackage, kwokModule, version, goVersion)
	bin := filepath.Join(cache, "kwok")
	if old, err := os.ReadFile(bin + ".stamp"); err == nil && string(old) == stamp {
		if _, err := os.Stat(bin); err == nil {
			return bin, nil
		}
	}
	fmt.Fprintf(progress, "harness: building kwok from %s %s into %s\n", kwokModule, version, cache)
	if err := goBuild(ctx, e2eDir, "kwok", bin, "", kwokPackage, progress); err != nil {
		return "", err
	}
	return bin, os.WriteFile(bin+".stamp", []byte(stamp), 0o644)
}

// StartKwok builds kwok if needed (BuildKwok) and runs it against the cluster as the kubelet of
// every node (--manage-all-nodes), with the Stage objects of stages (a multi-document YAML of
// kind Stage, apiVersion kwok.x-k8s.io/v1alpha1). It is stopped when t's cleanups run.
func (c *Cluster) StartKwok(t T, stages []byte) *Process {
	t.Helper()
	bin, err := BuildKwok(t.Context(), os.Stderr)
	if err != nil {
		t.Fatalf("building kwok: %v", err)
	}
	cfg := filepath.Join(c.Dir, "kwok-stages.yaml")
	if err := os.WriteFile(cfg, stages, 0o644); err != nil {
		t.Fatalf("%v", err)
	}
	return StartProcess(t, "kwok", c.logDir, bin, nil,
		"--config="+cfg,
		"--kubeconfig="+c.Kubeconfig,
		"--manage-all-nodes=true",
		"--node-lease-duration-seconds=0",
		"--cidr=10.128.0.0/12",
	)
}
