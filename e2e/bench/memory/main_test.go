package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// TestMain makes the test binary, copied under another name, a process that only waits: see
// TestFillers.
func TestMain(m *testing.M) {
	if os.Getenv("BENCH_MEMORY_TEST_WAIT") != "" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestFillers finds the cluster's processes by their name and the cluster's directory on their
// command line, and reads their CPU time.
func TestFillers(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir, other := t.TempDir(), t.TempDir()
	start := func(name, arg string) int {
		exe := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(exe, b, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exe, arg)
		cmd.Env = append(os.Environ(), "BENCH_MEMORY_TEST_WAIT=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd.Process.Pid
	}
	etcd := start("etcd", "--data-dir="+dir+"/etcd-data")
	start("kube-apiserver", "--cert-dir="+other)  // another cluster's
	start("kube-scheduler", "--config="+dir+"/x") // not a control-plane process it counts
	var got map[string]int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = fillers(dir); got["etcd"] == etcd { // the command line is readable once exec is done
			break
		}
	}
	if len(got) != 2 || got["etcd"] != etcd || got["bench-memory"] != os.Getpid() {
		t.Errorf("fillers = %v, want etcd %d and this process %d only", got, etcd, os.Getpid())
	}

}

// stored is pod j as a kube-apiserver stores it, with bench-memory's pods: defaults added, a uid,
// managed fields naming the owner's uid and the pod's IP, the node's zone label, and extra (a
// field set per pod, when given).
func stored(j, nodes int, now time.Time, extra func(*corev1.Pod)) *corev1.Pod {
	p := sent(j, nodeName(nodeOf(j, nodes)), now)
	p.UID, p.ResourceVersion, p.CreationTimestamp = uuid.NewUUID(), "42", metav1.NewTime(now)
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].TerminationMessagePath = "/dev/termination-log"
	}
	p.Spec.RestartPolicy = corev1.RestartPolicyAlways
	p.Labels[zoneLabel] = zoneOf(nodeOf(j, nodes))
	fields := fmt.Sprintf(`{"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"%s\"}":{}}},"f:status":{"f:podIPs":{"k:{\"ip\":\"%s\"}":{}}}}`,
		p.OwnerReferences[0].UID, p.Status.PodIP)
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "bench-memory", Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: "v1", Time: &p.CreationTimestamp, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}}
	if extra != nil {
		extra(p)
	}
	return p
}

// TestPodLoaderPredictsWhatTheServerStores: what the server added to the first pods of each shape
// is added to the others, with their own owner, IP and zone; a field the server sets per pod
// that the loader does not know stops it.
func TestPodLoaderPredictsWhatTheServerStores(t *testing.T) {
	const nodes = 7
	var pods []*corev1.Pod
	var times []time.Time
	for j := range throughAPI {
		times = append(times, time.Unix(1_800_000_000+int64(j), 0))
		pods = append(pods, stored(j, nodes, times[j], nil))
	}
	l, err := newPodLoader(pods, nodes, times)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_001_000, 0)
	for _, j := range []int{1234, 1235} {
		got, err := l.predict(j, now)
		if err != nil {
			t.Fatal(err)
		}
		if d, err := diff(normalized(got), normalized(stored(j, nodes, now, nil))); err != nil || string(d) != "{}" {
			t.Errorf("pod %d: the prediction differs from the stored pod by %s (%v)", j, d, err)
		}
		if got.UID == "" || got.ResourceVersion != "" || !got.CreationTimestamp.Time.Equal(now) {
			t.Errorf("pod %d: uid %q, resourceVersion %q, created %v: want a uid, none, %v", j, got.UID, got.ResourceVersion, got.CreationTimestamp, now)
		}
		b, err := l.encode(got)
		if err != nil || !bytes.HasPrefix(b, []byte("k8s\x00")) {
			t.Errorf("pod %d encoded: %q..., %v: want kube-apiserver's protobuf envelope", j, b[:min(8, len(b))], err)
		}
	}

	pods[2] = stored(2, nodes, times[2], func(p *corev1.Pod) { p.Annotations["set-per-pod"] = "2" })
	if _, err := newPodLoader(pods, nodes, times); err == nil || !strings.Contains(err.Error(), "pod 2 ") || !strings.Contains(err.Error(), "set-per-pod") {
		t.Errorf("a field set per pod: %v, want an error naming pod 2 and the field", err)
	}
}
