package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClusterLifecycle starts a control plane, schedules a pod with the default profile and no
// extender, restarts the API server (the data must survive), and checks that cleanup leaves no
// process of the cluster's behind.
func TestClusterLifecycle(t *testing.T) {
	var pids []int
	t.Run("cluster", func(t *testing.T) {
		c := StartCluster(t)
		c.CreateNode(t, NodeSpec{Name: "n1", Labels: map[string]string{"zone": "a"}})
		c.StartScheduler(t, SchedulerOptions{Config: []byte(`
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: plain
`)})
		c.CreatePod(t, PodSpec{Name: "p1", SchedulerName: "plain", CPU: "100m"})
		if got := c.WaitForBinding(t, "default", "p1"); got != "n1" {
			t.Fatalf("p1 bound to %q, want n1", got)
		}
		if e := c.WaitForEvent(t, "default", "p1", "Scheduled", "n1"); e.Type != "Normal" {
			t.Errorf("Scheduled event of type %q", e.Type)
		}

		c.StopAPIServer(t)
		if c.APIServerRunning() {
			t.Fatal("API server still running after StopAPIServer")
		}
		c.StartAPIServer(t)
		n, err := c.Client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("node after restart: %v", err)
		}
		if n.Labels["zone"] != "a" || n.Status.Allocatable.Cpu().String() != "4" {
			t.Errorf("node after restart: labels %v, allocatable cpu %s", n.Labels, n.Status.Allocatable.Cpu())
		}
		c.CreatePod(t, PodSpec{Name: "p2", SchedulerName: "plain"})
		if got := c.WaitForBinding(t, "default", "p2"); got != "n1" {
			t.Fatalf("p2 bound to %q, want n1", got)
		}
		pids = childPids(t)
		if len(pids) < 3 {
			t.Fatalf("expected etcd, kube-apiserver and kube-scheduler among the children, found pids %v", pids)
		}
	})
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("process %d still alive after cleanup", pid)
		}
	}
}

// childPids lists the live processes whose parent is this one.
func childPids(t *testing.T) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == self && f[0] != "Z" {
			out = append(out, pid)
		}
	}
	return out
}

// TestNoProcessLeftBehind runs a test in a child process that starts a cluster, an extender and a
// scheduler, records their process ids, and then fails, panics or is killed. Every process it
// started must be gone afterwards: cleanups stop them on failure and panic, and the kernel
// kills them (parent-death signal) when the test process itself is killed.
func TestNoProcessLeftBehind(t *testing.T) {
	if os.Getenv("HARNESS_HELPER_MODE") != "" {
		t.Skip("inside the helper")
	}
	for _, mode := range []string{"fail", "panic", "kill"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "pids")
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperLeaves$", "-test.v")
			cmd.Env = append(os.Environ(), "HARNESS_HELPER_MODE="+mode, "HARNESS_HELPER_PIDS="+pidFile)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the helper test passed; it should have failed (%s):\n%s", mode, tail(out))
			}
			b, rerr := os.ReadFile(pidFile)
			if rerr != nil {
				t.Fatalf("the helper wrote no process ids: %v\n%s", rerr, tail(out))
			}
			pids := strings.Fields(string(b))
			if len(pids) < 4 {
				t.Fatalf("helper recorded %v, want etcd, kube-apiserver, extender, kube-scheduler", pids)
			}
			// SIGKILL from the kernel is immediate, but reaping by init may take a moment.
			deadline := time.Now().Add(10 * time.Second)
			for _, p := range pids {
				pid, _ := strconv.Atoi(p)
				for alive(pid) && time.Now().Before(deadline) {
					time.Sleep(100 * time.Millisecond)
				}
				if alive(pid) {
					t.Errorf("process %d left behind after the helper's %s", pid, mode)
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

func tail(b []byte) string {
	lines := strings.Split(string(b), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// TestHelperLeaves is TestNoProcessLeftBehind's child: it does nothing unless run by it.
func TestHelperLeaves(t *testing.T) {
	mode := os.Getenv("HARNESS_HELPER_MODE")
	if mode == "" {
		t.Skip("run by TestNoProcessLeftBehind")
	}
	c := StartCluster(t)
	ext := StartExtender(t, ExtenderOptions{Tags: []string{"template"}})
	s := c.StartScheduler(t, SchedulerOptions{Config: []byte(`
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
`)})
	var pids []string
	for _, p := range []*Process{c.etcd, c.apiserver, ext.Process, s.Process} {
		pids = append(pids, strconv.Itoa(p.Pid()))
	}
	if err := os.WriteFile(os.Getenv("HARNESS_HELPER_PIDS"), []byte(strings.Join(pids, " ")), 0o644); err != nil {
		t.Fatal(err)
	}
	switch mode {
	case "fail":
		t.Fatal("failing on purpose")
	case "panic":
		panic("panicking on purpose")
	case "kill":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}

// waitUntil gives up with a message naming the process when it exits, and names the timeout
// when the condition never holds.
func TestWaitUntil(t *testing.T) {
	never := func(context.Context) bool { return false }
	short := StartProcess(t, "short-lived", t.TempDir(), "/bin/sh", nil, "-c", "exit 3")
	if err := waitUntil(t.Context(), time.Minute, short, never); err == nil || !strings.Contains(err.Error(), "short-lived exited") {
		t.Errorf("process that exits: %v", err)
	}
	long := StartProcess(t, "sleeper", t.TempDir(), "/bin/sh", nil, "-c", "sleep 60")
	if err := waitUntil(t.Context(), 500*time.Millisecond, long, never); err == nil || !strings.Contains(err.Error(), "sleeper: not ready after 500ms") {
		t.Errorf("condition that never holds: %v", err)
	}
	calls := 0
	if err := waitUntil(t.Context(), time.Minute, long, func(context.Context) bool { calls++; return calls == 3 }); err != nil {
		t.Errorf("condition that holds at the third call: %v", err)
	}
}

// TestCPUTicks: a process's ticks grow with its work; no process reads 0.
func TestCPUTicks(t *testing.T) {
	before := CPUTicks(os.Getpid())
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
	}
	if after := CPUTicks(os.Getpid()); after <= before {
		t.Errorf("CPUTicks: %d after 100 ms of work, %d before", after, before)
	}
	if CPUTicks(-1) != 0 {
		t.Error("CPUTicks of no process: want 0")
	}
}
