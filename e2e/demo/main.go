// Command demo is make run: a local control plane (etcd, kube-apiserver and kube-scheduler as
// real processes on loopback) with every agent attached as a sidecar process, as
// yamlfiles/extender.*.yaml deploy them. It creates nodes with varied usage statistics,
// congestion and allocation, schedules a sample workload through my-scheduler and prints a
// placement table: for each pod the node chosen and the runner-up, with each agent's verdict and
// score on both, asked from the agents directly. Then it schedules the same workload again
// through kube-safe-scheduler (the agents as plugins, plugin mode) and prints both placements
// side by side. Then it keeps the cluster up for kubectl until Ctrl-C, and stops every process
// it started.
//
// Usage: make run, or (in e2e/) go run ./demo [-exit]. With -exit (or DEMO_EXIT=1) it stops
// after the table, for scripts and CI.
package main

import (
	_ "embed"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

//go:embed demo.yaml
var demoYAML []byte

func main() {
	exit := flag.Bool("exit", os.Getenv("DEMO_EXIT") == "1", "stop after printing the placement table (env DEMO_EXIT=1)")
	flag.Parse()

	s := harness.NewSession(os.Stderr)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-signals
		fmt.Fprintln(os.Stderr, "\nstopping: the scheduler, the agents, kube-apiserver and etcd")
		s.Close()
		os.Exit(130)
	}()

	root, err := harness.RepoRoot()
	if err != nil {
		s.Fatalf("%v", err)
	}
	step("control plane: etcd, kube-apiserver and kube-scheduler from the Go module proxy (cached in .cache/bin)")
	harness.ControlPlane(s)
	step("starting etcd and kube-apiserver on loopback")
	c := harness.StartCluster(s)

	step("creating the my-scheduler service account (yamlfiles/service-account.yaml) and the nodes")
	c.ApplyFile(s, filepath.Join(root, "yamlfiles", "service-account.yaml"), false)
	sa := c.KubeconfigFor(s, "system:serviceaccount:kube-system:my-scheduler",
		"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")
	createNodes(s, c)
	step("telemetry: the TASPolicy CRD, a policy and a custom metrics API server (node_cpu per node)")
	setupTelemetry(s, c, root)

	step("starting the agents (sidecars) and kube-scheduler as the Deployment of e2e/demo/demo.yaml runs them")
	d, err := harness.LoadDeployment("demo.yaml", demoYAML)
	if err != nil {
		s.Fatalf("%v", err)
	}
	run := c.RunDeployment(s, d, harness.RunOptions{Kubeconfig: sa})
	exts, err := extendersOf(run)
	if err != nil {
		s.Fatalf("%v", err)
	}

	step("scheduling the sample workload through my-scheduler, one pod at a time")
	fmt.Println()
	printNodes(s, c)
	fmt.Println()
	placed, reasons := placeWorkload(s, c, exts)
	for _, n := range telemetryNotes(s, c) {
		fmt.Println("  " + n)
	}

	step("plugin mode: the same workload through kube-safe-scheduler, the agents compiled in as plugins (scheduler/)")
	fmt.Println()
	placeWithPlugins(s, c, exts, placed, reasons)

	fmt.Printf(`
The cluster is up. Use it with kubectl:
  export KUBECONFIG=%s
  kubectl get nodes -L template.extender/allowed -L demo-policy
  kubectl get taspolicies
  kubectl get pods -o wide
  kubectl get events --field-selector reason=FailedScheduling
New pods with spec.schedulerName: my-scheduler go through the agents (see yamlfiles/test-pod.yaml),
with spec.schedulerName: kube-safe-scheduler through the same agents as plugins.
Logs: %s
`, c.Kubeconfig, logHint())
	if *exit {
		s.Close()
		return
	}
	fmt.Println("Press Ctrl-C to stop everything.")
	select {}
}

func step(msg string) { fmt.Fprintf(os.Stderr, "==> %s\n", msg) }

func logHint() string {
	if d := os.Getenv("E2E_LOG_DIR"); d != "" {
		return d
	}
	return "set E2E_LOG_DIR=<dir> to keep every process's log"
}
