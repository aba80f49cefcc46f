package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
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
	"github.com/kube-safe-scheduler/extender/internal/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/fixtures"
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
		// an agent's range, checked by its Config.Validate, named by variable and flag
		{"agent range", nil, env("AGENTS", "safe", "SAFEUTILIZATION", "101"),
			"agent safe:\ninvalid SAFEUTILIZATION (or --safe-utilization): 101 is out of range [0, 100]"},
		{"agent value", nil, env("AGENTS", "congestion", "CONGESTION_FACTOR_MAX", "many"),
			`invalid CONGESTION_FACTOR_MAX (or --congestion-factor-max): "many" is not an integer`},
		{"unknown flag", []string{"--frobnicate"}, env(), "flag provided but not defined"},
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

// The binary serves, answers /version, and stops cleanly when its context ends (SIGTERM).
func TestRunServesAndStops(t *testing.T) {
	requireAgents(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

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
		port, path string
		want       int
	}{{addr, "/readyz", 0}, {":" + strings.Split(addr, ":")[1], "/healthz", 0}, {addr, "/nothere", 1}, {"127.0.0.1:1", "/readyz", 1}} {
		var probeOut syncBuffer
		if code := run(context.Background(), []string{"probe", c.path}, env("HTTP_PORT", c.port), &probeOut); code != c.want {
			t.Errorf("probe %s%s: exit %d, want %d: %s", c.port, c.path, code, c.want, probeOut.String())
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
	rng := rand.New(rand.NewPCG(16, 3))
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
