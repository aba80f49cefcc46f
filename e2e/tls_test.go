package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// TestSafeMTLSYAML: yamlfiles/extender.safe.mtls.yaml as shipped, its Secrets holding
// certificates the test makes: the real kube-scheduler calls the extender over HTTPS with its
// client certificate (enableHTTPS, tlsConfig) and places pods as the safe agent says; the
// extender's exec probes pass over mutual TLS; a client without a certificate, with one of
// another CA, or with one not named my-scheduler is refused.
func TestSafeMTLSYAML(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe")
	c, sa := startWithServiceAccount(t)
	ca := harness.NewTestCA(t)
	secrets := map[string]map[string][]byte{
		"my-scheduler-extender-tls": ca.Secret(t, "extender", true),
		"my-scheduler-client-tls":   ca.Secret(t, "my-scheduler", false),
	}
	c.CreateNode(t, harness.NodeSpec{Name: "risky", Annotations: riskyStats})
	r := c.RunDeployment(t, loadDeployment(t, "extender.safe.mtls.yaml"), harness.RunOptions{Kubeconfig: sa, Secrets: secrets})
	r.CheckProbes(t)
	for _, want := range []string{"enableHTTPS: true", "urlPrefix: https://127.0.0.1:"} {
		if !strings.Contains(string(r.Config), want) {
			t.Fatalf("the scheduler's configuration lacks %q:\n%s", want, r.Config)
		}
	}

	// The filter is reached: the pod stays pending with the agent's reason.
	c.ApplyFile(t, filepath.Join(repoRoot(t), "yamlfiles", "test-pod.yaml"), false)
	e := c.WaitForEvent(t, "default", "test-pod", "FailedScheduling", "0/1 nodes are available", "cpu risk", "threshold 0.90")
	t.Logf("over mutual TLS, test-pod on the risky node alone: %s", e.Message)
	c.CreateNodes(t,
		harness.NodeSpec{Name: "idle", Annotations: idleStats},
		harness.NodeSpec{Name: "busy", Annotations: busyStats},
	)
	if n := c.WaitForBinding(t, "default", "test-pod"); n != "idle" {
		t.Fatalf("test-pod went to %s, want idle", n)
	}
	for i := range 2 {
		scheduleOn(t, c, harness.PodSpec{Name: fmt.Sprintf("p%d", i), CPU: "100m", Memory: "64Mi"}, "idle",
			"safe-overload and safe-balance prefer idle, over mutual TLS")
	}

	// The extender's own account of test-pod, read over mutual TLS: the filter rejected risky
	// while it was alone, then passed idle.
	status, body, err := r.Extenders["safe"].Get(t.Context(), "/debug/decisions?pod=default/test-pod")
	if err != nil || status != http.StatusOK {
		t.Fatalf("/debug/decisions: status %d, error %v: %s", status, err, body)
	}
	var decisions struct {
		Decisions []struct {
			Function, Verb string
			Nodes          []struct{ Node, Verdict, Reason string }
		}
	}
	if err := json.Unmarshal(body, &decisions); err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]string{}
	for _, d := range decisions.Decisions {
		for _, n := range d.Nodes {
			if d.Verb == "filter" && d.Function == "safe-overload" {
				verdicts[n.Node] += n.Verdict + " "
			}
		}
	}
	if !strings.Contains(verdicts["risky"], "fail") || !strings.Contains(verdicts["idle"], "pass") {
		t.Errorf("/debug/decisions for test-pod: filter verdicts %v, want risky failed and idle passed:\n%s", verdicts, body)
	}

	// Who is refused, at the handshake.
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", r.Extenders["safe"].Port)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM())
	pair := func(secret map[string][]byte) []tls.Certificate {
		p, err := tls.X509KeyPair(secret["tls.crt"], secret["tls.key"])
		if err != nil {
			t.Fatal(err)
		}
		return []tls.Certificate{p}
	}
	get := func(certs []tls.Certificate) error {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}, DisableKeepAlives: true}}
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	if err := get(pair(secrets["my-scheduler-client-tls"])); err != nil {
		t.Fatalf("the scheduler's client certificate is refused: %v", err)
	}
	for name, certs := range map[string][]tls.Certificate{
		"no client certificate":         nil,
		"a certificate of another CA":   pair(harness.NewTestCA(t).Secret(t, "my-scheduler", false)),
		"a certificate not named so":    pair(ca.Secret(t, "intruder", false)),
		"the extender's own (a server)": pair(secrets["my-scheduler-extender-tls"]),
	} {
		err := get(certs)
		if err == nil || !strings.Contains(err.Error(), "tls:") {
			t.Errorf("%s: error %v, want a TLS refusal", name, err)
		} else {
			t.Logf("%s: refused: %v", name, err)
		}
	}
	if resp, err := http.Get(strings.Replace(url, "https", "http", 1)); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP is served")
		}
	}
}

// TestSafeMTLSRotation: the extender's Secret is replaced the kubelet's way (new directory,
// symlink swap) while the real kube-scheduler goes on placing pods through it: a broken new key
// is logged and the previous certificate kept, a good new certificate is served within the
// reload interval, and every pod lands where the agent says throughout.
func TestSafeMTLSRotation(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe")
	c, sa := startWithServiceAccount(t)
	ca := harness.NewTestCA(t)
	server := ca.Secret(t, "extender", true)
	clientSecret := ca.Secret(t, "my-scheduler", false)
	c.CreateNodes(t,
		harness.NodeSpec{Name: "idle", Annotations: idleStats},
		harness.NodeSpec{Name: "busy", Annotations: busyStats},
	)
	const reload = time.Second
	r := c.RunDeployment(t, loadDeployment(t, "extender.safe.mtls.yaml"), harness.RunOptions{
		Kubeconfig: sa,
		Secrets:    map[string]map[string][]byte{"my-scheduler-extender-tls": server, "my-scheduler-client-tls": clientSecret},
		Env:        map[string]map[string]string{"safe": {"TLS_RELOAD_INTERVAL": reload.String()}},
	})
	ext := r.Extenders["safe"]
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM())
	pair, err := tls.X509KeyPair(clientSecret["tls.crt"], clientSecret["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	// served returns the serial number of the certificate a new connection is served.
	served := func() string {
		conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ext.Port), &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}})
		if err != nil {
			t.Fatalf("handshake with the extender: %v", err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	serialOf := func(secret map[string][]byte) string {
		p, err := tls.X509KeyPair(secret["tls.crt"], secret["tls.key"])
		if err != nil {
			t.Fatal(err)
		}
		leaf, _ := x509.ParseCertificate(p.Certificate[0])
		return leaf.SerialNumber.String()
	}
	pods := 0
	schedulePod := func(why string) {
		scheduleOn(t, c, harness.PodSpec{Name: fmt.Sprintf("p%d", pods), CPU: "100m", Memory: "64Mi"}, "idle", why)
		pods++
	}
	if got, want := served(), serialOf(server); got != want {
		t.Fatalf("served serial %s, want the Secret's %s", got, want)
	}
	schedulePod("before any rotation")

	// A broken update: the key of another certificate. Kept out, logged.
	broken := ca.Secret(t, "extender", true)
	broken["tls.key"] = ca.Secret(t, "extender", true)["tls.key"]
	r.UpdateSecret(t, "my-scheduler-extender-tls", broken)
	time.Sleep(3 * reload)
	if got, want := served(), serialOf(server); got != want {
		t.Fatalf("after a broken update: served serial %s, want the previous %s", got, want)
	}
	if !strings.Contains(ext.Tail(50), "keeping the previous certificate") {
		t.Errorf("the broken update is not logged:\n%s", ext.Tail(50))
	}
	schedulePod("after a broken update")

	// A good update: served within the reload interval (and a poll's slack), pods go on landing.
	next := ca.Secret(t, "extender", true)
	r.UpdateSecret(t, "my-scheduler-extender-tls", next)
	swapped := time.Now()
	for served() != serialOf(next) {
		if time.Since(swapped) > reload+3*time.Second {
			t.Fatalf("the new certificate is not served %s after the update (reload interval %s)", time.Since(swapped), reload)
		}
		schedulePod("during the rotation")
	}
	t.Logf("new certificate served %s after the Secret's update; %d pods placed so far", time.Since(swapped).Round(time.Millisecond), pods)
	for range 3 {
		schedulePod("after the rotation")
	}
	if !strings.Contains(ext.Tail(50), "TLS certificate reloaded") {
		t.Errorf("the reload is not logged:\n%s", ext.Tail(50))
	}
}
