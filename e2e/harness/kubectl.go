package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// kubectlMain is kubectl's main (k8s.io/kubernetes/cmd/kubectl), over the published module
// k8s.io/kubectl: building it from k8s.io/kubernetes needs that module's replace lines, which
// go install ignores and e2e/go.mod would have to grow for kubectl's own dependencies.
const kubectlMain = `package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
`

// Kubectl makes sure kubectl of the Kubernetes release e2e/go.mod pins (k8s.io/kubectl
// v0.<minor>.<patch> for k8s.io/kubernetes v1.<minor>.<patch>) is in .cache/kubectl/<version>/
// and returns its path. The first call builds it from the Go module proxy in a module of its own
// (several minutes on two cores), under a file lock, as Helm is built; the root module and
// e2e/go.mod do not depend on it.
func Kubectl(ctx context.Context, progress io.Writer) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	kube, err := goOutput(ctx, filepath.Join(root, "e2e"), "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes")
	if err != nil {
		return "", err
	}
	version := "v0." + strings.TrimPrefix(kube, "v1.")
	dir := filepath.Join(root, ".cache", "kubectl", version)
	return builtOnce(filepath.Join(dir, "kubectl"), progress, func(bin string) error {
		src := filepath.Join(dir, "src")
		if err := os.MkdirAll(src, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module kubectl\n\ngo 1.24\n"), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(kubectlMain), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(progress, "harness: building kubectl %s into %s (the first build takes several minutes)\n", version, dir)
		env := append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=")
		for _, args := range [][]string{
			{"get", "k8s.io/kubectl@" + version, "k8s.io/component-base@" + version},
			{"mod", "tidy"},
			{"build", "-ldflags", ldflags("k8s.io/kubernetes", kube), "-o", bin + ".tmp", "."},
		} {
			cmd := exec.CommandContext(ctx, "go", args...)
			cmd.Env, cmd.Dir = env, src
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("building kubectl: go %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		return os.Rename(bin+".tmp", bin)
	})
}
