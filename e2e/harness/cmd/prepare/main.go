// Command prepare builds the control plane binaries (etcd, kube-apiserver, kube-scheduler) and kubectl at the
// versions e2e/go.mod pins into the repository's .cache/bin, or checks that they are there,
// printing progress. make e2e runs it before the tests so that the long first build shows its
// progress instead of running silently inside go test.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	b, err := harness.BuildControlPlane(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	// kubectl runs the docs' commands (e2e/docs_commands_test.go).
	kubectl, err := harness.Kubectl(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	fmt.Printf("etcd:           %s\nkube-apiserver: %s\nkube-scheduler: %s\nkubectl:        %s\n", b.Etcd, b.APIServer, b.Scheduler, kubectl)
}
