package e2e

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// tasSchedulerConfig is telemetry-aware-scheduling/deploy/extender-configuration/
// scheduler-config.yaml of github.com/intel/platform-aware-scheduling (commit c4c90e3), byte
// for byte (CRLF line ends included): the KubeSchedulerConfiguration TAS users hold. Its
// sha256 pins it.
const (
	tasSchedulerConfig       = "testdata/tas/scheduler-config.yaml"
	tasSchedulerConfigSHA256 = "760eabcea07fdf66ec8334eb06801d6f016ecfbce60602e034863c1a8dcf0b12"
)

// tasResource is the extended resource TAS pods request (telemetry/scheduling: 1).
var tasResource = corev1.ResourceList{"telemetry/scheduling": resource.MustParse("1")}

// TestTelemetryTASConfig: the real kube-scheduler runs TAS's own scheduler configuration with
// what a local control plane must change, and nothing else: XVERSIONX set to v1 (TAS's
// configure-scheduler.sh does it), the urlPrefix's host and port, the kubeconfig, and the
// directory its client certificate is mounted at (/host/certs in TAS's scheduler pod). It calls
// the telemetry agent over HTTPS, with a client certificate, at TAS's verbs scheduler/filter and
// scheduler/prioritize. As TAS marks the extender ignorable, a verb answered 404 would be
// skipped silently: the pod pinned to the node violating dontschedule proves the filter is
// reached, the pod landing on the lowest node_cpu that the priority is. Pods request
// telemetry/scheduling (no node has it: managedResources, ignoredByScheduler) and are
// scheduled; a labelled pod that does not request it is not sent to the extender, as in TAS.
func TestTelemetryTASConfig(t *testing.T) {
	t.Parallel()
	requireAgents(t, "telemetry")
	original, err := os.ReadFile(tasSchedulerConfig)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(original); hex.EncodeToString(sum[:]) != tasSchedulerConfigSHA256 {
		t.Fatalf("%s is not TAS's file any more (sha256 %x)", tasSchedulerConfig, sum)
	}

	c := harness.StartCluster(t)
	telemetryNodes(t, c, telemetryPolicy)

	// TAS's extender serves TLS and asks for a client certificate; so does this one.
	dir := t.TempDir()
	ca := harness.NewTestCA(t)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	server, client := ca.Secret(t, "telemetry-extender", true), ca.Secret(t, "kube-scheduler", false)
	caFile := write("ca.crt", ca.CertPEM())
	write("client.crt", client["tls.crt"])
	write("client.key", client["tls.key"])
	pair, err := tls.X509KeyPair(client["tls.crt"], client["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM())
	ext := harness.StartExtender(t, harness.ExtenderOptions{Name: "extender telemetry tas", Tags: []string{"telemetry"},
		TLS: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}},
		Env: map[string]string{"KUBECONFIG": c.Kubeconfig, "AGENTS": "telemetry", "TELEMETRY_SYNC_PERIOD": "1s",
			"TELEMETRY_MAX_AGE": "6s", "TELEMETRY_DESCHEDULE": "false",
			"TLS_CERT_FILE": write("server.crt", server["tls.crt"]), "TLS_KEY_FILE": write("server.key", server["tls.key"]),
			"TLS_CLIENT_CA_FILE": caFile}})

	// The changes, line by line: nothing else differs from TAS's file.
	replacements := [][2]string{
		{"kubescheduler.config.k8s.io/XVERSIONX", "kubescheduler.config.k8s.io/v1"},
		{"https://tas-service.telemetry-aware-scheduling.svc.cluster.local:9001", "https://127.0.0.1:" + strconv.Itoa(ext.Port)},
		{"/host/certs/", dir + "/"},
	}
	config := original
	for _, r := range replacements {
		if !bytes.Contains(config, []byte(r[0])) {
			t.Fatalf("TAS's file has no %q", r[0])
		}
		config = bytes.ReplaceAll(config, []byte(r[0]), []byte(r[1]))
	}
	was, now := strings.Split(string(original), "\r\n"), strings.Split(string(config), "\r\n")
	changed := 0
	for i := range was {
		if was[i] != now[i] {
			changed++
		}
	}
	if len(was) != len(now) || changed != 4 { // apiVersion, urlPrefix, certFile, keyFile
		t.Fatalf("%d lines changed, want 4:\n%s", changed, config)
	}
	// StartScheduler sets clientConnection.kubeconfig (TAS's: /etc/kubernetes/scheduler.conf).
	c.StartScheduler(t, harness.SchedulerOptions{Name: "kube-scheduler tas", Config: config})

	labelled := map[string]string{"telemetry-policy": "demo-policy"}
	// The lowest node_cpu wins (cool 20; warm 60; hot 95 fails dontschedule): the priority
	// is reached at scheduler/prioritize, over HTTPS.
	for _, name := range []string{"tas-1", "tas-2"} {
		c.CreatePod(t, harness.PodSpec{Name: name, Labels: labelled, Extra: tasResource})
		if n := c.WaitForBinding(t, "default", name); n != "cool" {
			t.Fatalf("%s went to %s, want cool (lowest node_cpu)", name, n)
		}
	}
	// Pinned to hot: the filter, reached at scheduler/filter, keeps it pending with its reason.
	pinned, err := harness.PodSpec{Name: "pinned", Labels: labelled, Extra: tasResource}.Pod()
	if err != nil {
		t.Fatal(err)
	}
	pinned.Spec.NodeSelector = map[string]string{"e2e/pin": "hot"}
	if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), pinned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := c.WaitForEvent(t, "default", "pinned", "FailedScheduling", "telemetry policy default/demo-policy: node_cpu 95 > 90")
	t.Logf("pinned: %s", e.Message)
	if strings.Contains(e.Message, "Insufficient telemetry/scheduling") {
		t.Errorf("the scheduler counted telemetry/scheduling: %s", e.Message)
	}
	// Without the resource, the scheduler does not call the extender (managedResources): the
	// same pinned pod lands on hot.
	free, err := harness.PodSpec{Name: "unmanaged", Labels: labelled}.Pod()
	if err != nil {
		t.Fatal(err)
	}
	free.Spec.NodeSelector = map[string]string{"e2e/pin": "hot"}
	if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), free, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := c.WaitForBinding(t, "default", "unmanaged"); n != "hot" {
		t.Fatalf("unmanaged went to %s", n)
	}
}
