// Package harness runs a real Kubernetes control plane on loopback for end-to-end tests and
// for the demo (make run): etcd, kube-apiserver and kube-scheduler as real processes, built
// from the Go module proxy at the versions pinned in e2e/go.mod and cached in the repository's
// git-ignored .cache/bin, plus the extender itself, built with the wanted agent tags.
//
// Everything it starts is a child process in its own process group, stopped when the test (or
// Session) that started it cleans up, also when that test fails or panics; each child also gets
// SIGKILL from the kernel if the process that started it dies. Every port is a free loopback
// port chosen at run time, so several runs may overlap on one machine.
//
// A typical test:
//
//	c := harness.StartCluster(t)
//	c.CreateNode(t, harness.NodeSpec{Name: "n1", CPU: "4", Memory: "8Gi"})
//	ext := harness.StartExtender(t, harness.ExtenderOptions{Tags: []string{"template"}})
//	c.StartScheduler(t, harness.SchedulerOptions{Config: cfg})
//	c.CreatePod(t, harness.PodSpec{Name: "p", SchedulerName: "my-scheduler"})
//	node := c.WaitForBinding(t, "default", "p")
//
// Functions that take a T report failures through it (Fatalf) and register their cleanups
// with it; *testing.T and *testing.B are Ts, and so is a *Session, for programs.
package harness
