package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	allagents "github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// env returns a getenv over a fixed map.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// Built without an agent tag (plain go test), the binary refuses to start and says how to build.
func TestRunWithoutAgents(t *testing.T) {
	if len(agentsByName()) > 0 {
		t.Skip("agents compiled in; this test runs in a build without agent tags")
	}
	var out syncBuffer
	if code := run(context.Background(), nil, env(), &out); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	if !strings.Contains(out.String(), "go build -tags safe") {
		t.Errorf("message %q does not say how to build", out.String())
	}
}

func requireAgents(t *testing.T) {
	if len(agentsByName()) == 0 {
		t.Skip("no agent compiled in: run with -tags all")
	}
}

func TestRunRejectsMisconfiguration(t *testing.T) {
	requireAgents(t)
	cases := []struct {
		name string
		args []string
		env  func(string) (string, bool)
		want string
	}{
		{"log level", nil, env("LOG_LEVEL", "LOUD"), "invalid LOG_LEVEL (or --log-level)"},
		{"port", nil, env("HTTP_PORT", "eighty"), "invalid HTTP_PORT (or --listen)"},
		{"flag wins and is named", []string{"--listen", "nowhere"}, env("HTTP_PORT", "5401"), "invalid --listen (or HTTP_PORT)"},
		{"unknown agent", nil, env("AGENTS", "oracle"), `agent "oracle" is not compiled into this binary`},
		{"no agent", []string{"--agents", " , "}, env(), "no agent selected"},
		{"body limit", nil, env("MAX_BODY_BYTES", "-1"), "invalid MAX_BODY_BYTES"},
		{"decisions kept", nil, env("DECISIONS_KEPT", "-1"), "invalid DECISIONS_KEPT (or --decisions-kept)"},
		{"decisions inputs bytes", nil, env("DECISIONS_INPUTS_BYTES", "-1"), "invalid DECISIONS_INPUTS_BYTES (or --decisions-inputs-bytes)"},
		{"pprof not loopback", nil, env("PPROF_ADDR", "0.0.0.0:6060"), `invalid PPROF_ADDR (or --pprof-addr): "0.0.0.0:6060": the host must be a loopback address`},
		{"pprof all interfaces", []string{"--pprof-addr", ":6060"}, env(), "invalid --pprof-addr (or PPROF_ADDR)"},
		{"pprof bare port", nil, env("PPROF_ADDR", "6060"), `invalid PPROF_ADDR (or --pprof-addr): "6060" is not host:port`},
		// an agent's range, checked by its Config.Validate, named by variable and flag
		{"agent range", nil, env("AGENTS", "safe", "SAFEUTILIZATION", "101"),
			"invalid SAFEUTILIZATION (or --safe-utilization): 101 is out of range [0, 100]"},
		{"agent value", nil, env("AGENTS", "congestion", "CONGESTION_FACTOR_MAX", "many"),
			`invalid CONGESTION_FACTOR_MAX (or --congestion-factor-max): "many" is not an integer`},
		{"unknown flag", []string{"--frobnicate"}, env(), "flag provided but not defined"},
		{"stray argument", []string{"prob"}, env(), `unexpected argument "prob"`},
		{"tls key without certificate", nil, env("TLS_KEY_FILE", "/etc/tls/tls.key"),
			"invalid TLS_KEY_FILE (or --tls-key-file): a key without a certificate"},
		{"tls min version", nil, env("TLS_MIN_VERSION", "1.1"), `invalid TLS_MIN_VERSION (or --tls-min-version): "1.1" is not one of 1.2, 1.3`},
		{"tls unreadable certificate", []string{"--tls-cert-file", "/nonexistent/tls.crt", "--tls-key-file", "/nonexistent/tls.key"}, env(),
			"invalid TLS_CERT_FILE (or --tls-cert-file): cannot read the certificate"},
		{"tls allowed clients without CA", nil, env("TLS_ALLOWED_CLIENTS", "my-scheduler"), "invalid TLS_ALLOWED_CLIENTS (or --tls-allowed-clients)"},
		{"combined: unknown function", nil, env("AGENTS", "safe", "COMBINED_PRIORITIES", "safe-overload=2,congestion=1"),
			`invalid COMBINED_PRIORITIES (or --combined-priorities): priority "congestion" is not served by the agents of this process`},
		{"combined: bad weight", []string{"--combined-priorities", "safe-overload=1.5"}, env("AGENTS", "safe"),
			`invalid COMBINED_PRIORITIES (or --combined-priorities): "safe-overload=1.5": the weight must be an integer from 1 to 1000`},
		{"combined: duplicate", nil, env("AGENTS", "safe", "COMBINED_PRIORITIES", "safe-balance=1,safe-balance=2"),
			`invalid COMBINED_PRIORITIES (or --combined-priorities): priority "safe-balance" is listed twice`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out syncBuffer
			if code := run(context.Background(), tc.args, tc.env, &out); code != 2 {
				t.Errorf("exit code %d, want 2; output %s", code, out.String())
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("output %q lacks %q", out.String(), tc.want)
			}
		})
	}
}

// Every bad value is reported at once, at start: one that does not parse does not hide the
// others' ranges, one agent's do not hide another's (served or not), nor the extender's own.
func TestRunReportsEveryBadValueAtOnce(t *testing.T) {
	requireAgents(t)
	var out syncBuffer
	code := run(context.Background(), []string{"--reward-max-entries", "1"}, env(
		"AGENTS", "safe,reward",
		"SAFEUTILIZATION", "abc", // does not parse
		"SAFEPERCENTILE", "200", // out of range, same agent
		"SAFE_ESTIMATE", "bogus", // not a choice
		"REWARD_WEIGHT", "0", // another agent's range, (0, 1]
		"CONGESTION_FACTOR_MAX", "0", // an agent compiled in but not served
		"TLS_MIN_VERSION", "1.1", // the extender's own
		"DECISIONS_KEPT", "-1",
		"COMBINED_PRIORITIES", "safe-overload=1.5",
	), &out)
	if code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	for _, want := range []string{
		`invalid SAFEUTILIZATION (or --safe-utilization): "abc" is not an integer`,
		"invalid SAFEPERCENTILE (or --safe-percentile): 200 is out of range [0, 100]",
		`invalid SAFE_ESTIMATE (or --safe-estimate): "bogus" is not one of request, learned`,
		"invalid REWARD_WEIGHT (or --reward-weight): 0 is out of range (0, 1]",
		"invalid REWARD_MAX_ENTRIES (or --reward-max-entries): 1 is out of range [2, 8000]",
		"invalid CONGESTION_FACTOR_MAX (or --congestion-factor-max): 0 is out of range [1, 2147483647]",
		`invalid TLS_MIN_VERSION (or --tls-min-version): "1.1" is not one of 1.2, 1.3`,
		"invalid DECISIONS_KEPT (or --decisions-kept)",
		"invalid COMBINED_PRIORITIES (or --combined-priorities)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestHelp(t *testing.T) {
	requireAgents(t)
	var out syncBuffer
	if code := run(context.Background(), []string{"--help"}, env(), &out); code != 0 {
		t.Errorf("exit code %d", code)
	}
	for _, want := range []string{"Usage: extender", "HTTP_PORT", "LOG_LEVEL", "AGENTS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %s", want)
		}
	}
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The binary serves, answers /version, and stops cleanly when its context ends (SIGTERM).
func TestRunServesAndStops(t *testing.T) {
	requireAgents(t)
	addr := freeAddr(t)

	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"--listen", addr}, env("LOG_LEVEL", "DEBUG"), &out) }()

	var body []byte
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/version")
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(string(body), `"version":"dev"`) {
		t.Errorf("/version = %q; log %s", body, out.String())
	}
	// "extender probe": 0 while the server answers 200, 1 on another status or no server.
	for _, c := range []struct {
		url  string
		want int
	}{{"http://" + addr + "/readyz", 0}, {"http://" + addr + "/healthz", 0}, {"http://" + addr + "/nothere", 1}, {"http://127.0.0.1:1/readyz", 1}} {
		var probeOut syncBuffer
		if code := probe(context.Background(), []string{c.url}, io.Discard, &probeOut); code != c.want {
			t.Errorf("probe %s: exit %d, want %d: %s", c.url, code, c.want, probeOut.String())
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code %d; log %s", code, out.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("server did not stop after its context ended")
	}
	if !strings.Contains(out.String(), "extender stopped") {
		t.Errorf("log lacks the stop line: %s", out.String())
	}
}

// PPROF_ADDR serves Go's profiles on its loopback address, beside the extender's own address,
// which does not serve them.
func TestRunServesProfilesOnlyWhenAsked(t *testing.T) {
	requireAgents(t)
	addr, pprofAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--listen", addr}, env("PPROF_ADDR", pprofAddr, "CLUSTER_ACCESS", "none"), &out)
	}()
	get := func(url string) (int, []byte) {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			resp, err := http.Get(url)
			if err != nil {
				continue
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, b
		}
		t.Fatalf("%s: no answer; log %s", url, out.String())
		return 0, nil
	}
	if status, body := get("http://" + pprofAddr + "/debug/pprof/heap?debug=1"); status != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Errorf("PPROF_ADDR's heap profile: status %d, body %.80q", status, body)
	}
	if status, _ := get("http://" + addr + "/debug/pprof/heap"); status == http.StatusOK {
		t.Errorf("the extender's own address serves the profiles")
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit code %d; log %s", code, out.String())
	}
}

// Every agent's configuration round-trips through JSON (the form of a scheduler's pluginConfig
// args) with camelCase fields, and an empty object decodes to the defaults.
func TestConfigsRoundTripThroughJSON(t *testing.T) {
	for _, r := range allagents.All {
		t.Run(r.Name, func(t *testing.T) {
			def := r.NewConfig()
			data, err := json.Marshal(def)
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`^\{("[a-z][A-Za-z]*":[^,]+,?)*\}$`).Match(data) {
				t.Errorf("fields are not camelCase: %s", data)
			}
			back := r.NewConfig()
			if err := json.Unmarshal(data, back); err != nil {
				t.Fatal(err)
			}
			empty := r.NewConfig()
			if err := json.Unmarshal([]byte("{}"), empty); err != nil {
				t.Fatal(err)
			}
			opts := cmp.Exporter(func(reflect.Type) bool { return true })
			if diff := cmp.Diff(def, back, opts); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(def, empty, opts); diff != "" {
				t.Errorf("{} is not the defaults (-want +got):\n%s", diff)
			}
			if err := def.Validate(); err != nil {
				t.Errorf("defaults do not validate: %v", err)
			}
			checkDurations(t, def, data)
		})
	}
}

// checkDurations fails on a duration of cfg (data is its JSON) that is not a framework.Duration
// written as text ("2s"), and checks that a number given for one is an error naming the field.
func checkDurations(t *testing.T, cfg framework.Config, data []byte) {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeOf(cfg).Elem()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch f.Type {
		case reflect.TypeFor[time.Duration]():
			t.Errorf("%s is a bare time.Duration (JSON %s, nanoseconds): use framework.Duration", name, fields[name])
		case reflect.TypeFor[framework.Duration]():
			var text string
			if err := json.Unmarshal(fields[name], &text); err != nil {
				t.Errorf("%s is written %s, not as a duration string", name, fields[name])
			} else if _, err := time.ParseDuration(text); err != nil {
				t.Errorf("%s is written %q: %v", name, text, err)
			}
			err := json.Unmarshal([]byte(`{"`+name+`": 2}`), reflect.New(typ).Interface())
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s given the number 2: error %v, want one naming %s", name, err, name)
			}
		}
	}
}

// writePKI writes into dir a CA (ca.crt), a server certificate for 127.0.0.1 (server.crt,
// server.key) and a client certificate named my-scheduler (client.crt, client.key).
func writePKI(t *testing.T, dir string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	save := func(name, typ string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	save("ca.crt", "CERTIFICATE", caDER)
	for i, name := range []string{"server", "client"} {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: "my-scheduler"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		if name == "server" {
			tmpl.Subject.CommonName = "extender"
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, _ := x509.MarshalECPrivateKey(key)
		save(name+".crt", "CERTIFICATE", der)
		save(name+".key", "EC PRIVATE KEY", kder)
	}
}

// With TLS_CERT_FILE, TLS_KEY_FILE and TLS_CLIENT_CA_FILE the extender serves only clients with
// a certificate of that CA, /healthz and /metrics included; the probe subcommand checks it from
// inside the container.
func TestRunServesMutualTLS(t *testing.T) {
	requireAgents(t)
	dir := t.TempDir()
	writePKI(t, dir)
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--listen", addr}, env("TLS_CERT_FILE", filepath.Join(dir, "server.crt"),
			"TLS_KEY_FILE", filepath.Join(dir, "server.key"), "TLS_CLIENT_CA_FILE", filepath.Join(dir, "ca.crt"),
			"TLS_ALLOWED_CLIENTS", "my-scheduler"), &out)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit code %d; log %s", code, out.String())
		}
	}()
	withCert := []string{"--ca-file", filepath.Join(dir, "ca.crt"), "--cert-file", filepath.Join(dir, "client.crt"), "--key-file", filepath.Join(dir, "client.key")}
	probeURL := func(path string, flags ...string) (int, string) {
		var perr syncBuffer
		code := probe(context.Background(), append(flags, "https://"+addr+path), io.Discard, &perr)
		return code, perr.String()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, msg := probeURL("/healthz", withCert...)
		if code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("probe with a client certificate: exit %d: %s; log %s", code, msg, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, path := range []string{"/readyz", "/metrics", "/version", "/debug/decisions"} {
		if code, msg := probeURL(path, withCert...); code != 0 {
			t.Errorf("probe %s with a client certificate: exit %d: %s", path, code, msg)
		}
	}
	if code, msg := probeURL("/healthz", "--ca-file", filepath.Join(dir, "ca.crt")); code != 1 || !strings.Contains(msg, "certificate") {
		t.Errorf("probe without a client certificate: exit %d, %q; want 1 and a certificate error", code, msg)
	}
	if code, msg := probeURL("/healthz"); code != 1 || !strings.Contains(msg, "certificate") {
		t.Errorf("probe not trusting the server's CA: exit %d, %q; want 1 and a certificate error", code, msg)
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP served /healthz on the TLS listener")
		}
	}
	if !strings.Contains(out.String(), "client certificates required") {
		t.Errorf("the start line does not say the server requires client certificates: %s", out.String())
	}
}

func TestProbeUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"ftp://x/healthz"}, {"a", "b"}, {"--cert-file", "c.crt", "https://127.0.0.1:1/healthz"}} {
		var out syncBuffer
		if code := probe(context.Background(), args, io.Discard, &out); code != 2 || out.String() == "" {
			t.Errorf("probe %q: exit %d, message %q; want 2 and a message", args, code, out.String())
		}
	}
	// A closed port: the probe fails (1), it does not misreport a usage error.
	var out syncBuffer
	if code := probe(context.Background(), []string{"http://127.0.0.1:1/healthz"}, io.Discard, &out); code != 1 {
		t.Errorf("probe of a closed port: exit %d, want 1 (%s)", code, out.String())
	}
}

// The config and convert-policy subcommands: output on stdout, notes and errors on stderr,
// exit codes 0 (done), 1 (bad input), 2 (bad usage).
func TestConfigSubcommands(t *testing.T) {
	cases := []struct {
		cmd       string
		args      []string
		code      int
		stdout    string
		stderr    string
		noteCount int
	}{
		{"config", []string{"--agents", "safe,congestion", "--node-cache"}, 0, "urlPrefix: http://localhost:5402/scheduler", "", 0},
		{"config", []string{"--agents", "safe", "--https", "--sidecars"}, 0, "TLS_CLIENT_CA_FILE", "", 0},
		{"config", []string{"--agents", "oracle"}, 2, "", `--agents: unknown agent "oracle"`, 0},
		{"config", []string{"--agents", "safe,telemetry", "--mode", "plugin"}, 0, "ignoredResources:\n      - telemetry/scheduling\n    name: NodeResourcesFit", "", 0},
		{"config", []string{"--agents", "safe", "--mode", "plugin", "--https"}, 2, "", "--https is extender mode only", 0},
		{"config", []string{"--agents", "safe", "--mode", "plugins"}, 2, "", `--mode "plugins": want extender or plugin`, 0},
		{"config", []string{"--agents", "safe", "extra"}, 2, "", "unexpected argument", 0},
		{"convert-policy", []string{"internal/deploygen/schedconfig/testdata/tas-policy.json"}, 0, "enableHTTPS: true", "extenders[0].apiVersion is not a field", 1},
		{"convert-policy", []string{"internal/deploygen/schedconfig/testdata/classic-policy.yaml"}, 0, "hardPodAffinityWeight: 10", "predicate GeneralPredicates: use the plugin NodeResourcesFit", 15},
		{"convert-policy", []string{"main.go"}, 1, "", "main.go:", 0},
		{"convert-policy", []string{"/nonexistent/policy.json"}, 1, "", "no such file", 0},
		{"convert-policy", nil, 2, "", "Usage: extender convert-policy", 0},
	}
	for _, tc := range cases {
		t.Run(tc.cmd+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			if tc.cmd == "config" {
				requireAgents(t) // config knows the agents compiled in
			}
			var stdout, stderr syncBuffer
			code := subcommands[tc.cmd](context.Background(), tc.args, &stdout, &stderr)
			if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("exit %d, want %d\nstdout %s\nstderr %s", code, tc.code, stdout.String(), stderr.String())
			}
			if tc.noteCount > 0 {
				if n := strings.Count(stderr.String(), "convert-policy: "+tc.args[0]+": "); n != tc.noteCount {
					t.Errorf("%d notes, want %d:\n%s", n, tc.noteCount, stderr.String())
				}
			}
		})
	}
}

// For random nodes and pods, priorities/combined answers for every node the weighted mean of
// what the separate routes answer, rounded half up, through the real HTTP handler in both
// request forms.
func TestCombinedIsTheWeightedMeanOfTheRoutes(t *testing.T) {
	var agents []framework.Agent
	for _, r := range allagents.All {
		if r.Name == "safe" || r.Name == "congestion" {
			a, err := r.New(r.NewConfig(), framework.NewHandle(nil))
			if err != nil {
				t.Fatal(err)
			}
			agents = append(agents, a)
		}
	}
	parts := []framework.Weighted{{Name: "safe-overload", Weight: 2}, {Name: "safe-balance", Weight: 1}, {Name: "congestion", Weight: 3}}
	combined, err := framework.Combine(agents, parts)
	if err != nil {
		t.Fatal(err)
	}
	rng := mrand.New(mrand.NewPCG(16, 3))
	maybe := func(a map[string]string, key, value string) {
		if rng.IntN(8) > 0 {
			a[key] = value
		}
	}
	for round := range 60 {
		nodes := make([]*corev1.Node, 1+rng.IntN(30))
		for i := range nodes {
			a := map[string]string{}
			// 16 cores, 64 GiB; free amounts from overcommitted to idle.
			maybe(a, "mean-free-cpu", strconv.Itoa(rng.IntN(18000)-1000))
			maybe(a, "std-free-cpu", strconv.Itoa(rng.IntN(4000)))
			maybe(a, "mean-free-memory", strconv.FormatInt(rng.Int64N(70<<30)-(2<<30), 10))
			maybe(a, "std-free-memory", strconv.FormatInt(rng.Int64N(8<<30), 10))
			maybe(a, "congestion-factor", strconv.Itoa(rng.IntN(130)-10))
			n := fixtures.Node(i, a)
			nodes[i] = &n
		}
		h := extendertest.NewHandler(t, extendertest.LookupOf(nodes), append(slices.Clone(agents), combined)...)
		pod := fixtures.Pod("p", strconv.Itoa(1+rng.IntN(8000))+"m", strconv.Itoa(1+rng.IntN(16000))+"Mi")
		args := extendertest.Args(pod, nodes, round%2 == 0)
		sums := map[string]int64{}
		for _, p := range parts {
			for _, hp := range extendertest.Prioritize(t, h, p.Name, args) {
				sums[hp.Host] += p.Weight * hp.Score
			}
		}
		got := extendertest.Prioritize(t, h, "combined", args)
		if len(got) != len(nodes) {
			t.Fatalf("round %d: %d scores for %d nodes", round, len(got), len(nodes))
		}
		for _, hp := range got {
			if want := int64(math.Floor(float64(sums[hp.Host])/6 + 0.5)); hp.Score != want {
				t.Fatalf("round %d, node %s: combined %d, want %d (weighted sum %d / 6)", round, hp.Host, hp.Score, want, sums[hp.Host])
			}
		}
	}
}
