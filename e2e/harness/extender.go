package harness

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"time"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// Extender is a running extender process serving on 127.0.0.1.
type Extender struct {
	*Process
	ExtenderClient
	// Port is the port it serves on.
	Port int
	// Binary is the executable it runs.
	Binary string
}

// ExtenderOptions configure StartExtender.
type ExtenderOptions struct {
	// Name tells extenders apart in logs (default "extender").
	Name string
	// Binary to run; when empty, BuildExtender(t, Tags...) builds it.
	Binary string
	// Tags are the build tags for BuildExtender when Binary is empty.
	Tags []string
	// Env is the process's environment on top of the harness's own (AGENTS, LOG_LEVEL, agent
	// knobs, KUBECONFIG, ...). HTTP_PORT is always set by the harness, to 127.0.0.1:<Port>.
	Env map[string]string
	// Args are command-line flags.
	Args []string
	// Port to serve on; 0 picks a free one.
	Port int
	// ReadyPath is polled until it answers 200 (default "/readyz").
	ReadyPath string
	// TLS, when set, is the client configuration to reach an extender serving HTTPS (its
	// TLS_CERT_FILE set in Env): the readiness checks and the ExtenderClient use https with it.
	TLS *tls.Config
}

// StartExtender starts an extender process, waits until it is ready (ReadyPath answers 200:
// with cluster access, once its caches have synced) and returns it. It is stopped when t's
// cleanups run. Its log is in LogDir(t).
func StartExtender(t T, opts ExtenderOptions) *Extender {
	t.Helper()
	bin := opts.Binary
	if bin == "" {
		bin = BuildExtender(t, opts.Tags...)
	}
	name := opts.Name
	if name == "" {
		name = "extender"
	}
	ready := opts.ReadyPath
	if ready == "" {
		ready = "/readyz"
	}
	logDir := LogDir(t)
	for attempt := 1; ; attempt++ {
		port := opts.Port
		if port == 0 {
			port = MustFreePort(t)
		}
		env := make([]string, 0, len(opts.Env)+1)
		keys := make([]string, 0, len(opts.Env))
		for k := range opts.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k != "HTTP_PORT" {
				env = append(env, k+"="+opts.Env[k])
			}
		}
		env = append(env, "HTTP_PORT=127.0.0.1:"+strconv.Itoa(port))
		p := StartProcess(t, name, logDir, bin, env, opts.Args...)
		e := &Extender{Process: p, Port: port, Binary: bin, ExtenderClient: ExtenderClient{BaseURL: "http://127.0.0.1:" + strconv.Itoa(port)}}
		if opts.TLS != nil {
			e.BaseURL = "https://127.0.0.1:" + strconv.Itoa(port)
			e.HTTP = &http.Client{Timeout: extenderHTTP.Timeout, Transport: &http.Transport{TLSClientConfig: opts.TLS}}
		}
		err := waitUntil(t.Context(), StartTimeout, p, func(ctx context.Context) bool {
			return httpOK(ctx, e.client(), e.BaseURL+ready)
		})
		if err == nil {
			return e
		}
		if attempt < 3 && opts.Port == 0 && p.Exited() && addressInUse(p) {
			continue
		}
		t.Fatalf("%s: %v\n%s", name, err, p.Tail(30))
	}
}

// URLPrefix is the urlPrefix a KubeSchedulerConfiguration gives this extender.
func (e *Extender) URLPrefix() string { return e.BaseURL + "/scheduler" }

// ExtenderClient talks to an extender over HTTP as kube-scheduler does.
type ExtenderClient struct {
	// BaseURL is the extender's address, e.g. http://127.0.0.1:5401 (no /scheduler).
	BaseURL string
	// HTTP is the client to use (for HTTPS: with the client certificate); nil for a default one.
	HTTP *http.Client
}

func (c ExtenderClient) client() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return extenderHTTP
}

var extenderHTTP = &http.Client{Timeout: 10 * time.Second}

// Post sends body (JSON) to BaseURL+path and returns the status and answer.
func (c ExtenderClient) Post(ctx context.Context, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return do(c.client(), req)
}

// Get fetches BaseURL+path and returns the status and answer.
func (c ExtenderClient) Get(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+path, nil)
	if err != nil {
		return 0, nil, err
	}
	return do(c.client(), req)
}

func do(client *http.Client, req *http.Request) (int, []byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// Filter calls POST /scheduler/predicates/<name>.
func (c ExtenderClient) Filter(ctx context.Context, name string, args *extenderv1.ExtenderArgs) (*extenderv1.ExtenderFilterResult, error) {
	var out extenderv1.ExtenderFilterResult
	if err := c.call(ctx, "/scheduler/predicates/"+name, args, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Prioritize calls POST /scheduler/priorities/<name>.
func (c ExtenderClient) Prioritize(ctx context.Context, name string, args *extenderv1.ExtenderArgs) (extenderv1.HostPriorityList, error) {
	var out extenderv1.HostPriorityList
	if err := c.call(ctx, "/scheduler/priorities/"+name, args, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func (c ExtenderClient) call(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	status, answer, err := c.Post(ctx, path, body)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("POST %s: status %d: %s", path, status, bytes.TrimSpace(answer))
	}
	return json.Unmarshal(answer, out)
}

// VersionInfo is what an extender serves at /version.
type VersionInfo struct {
	Version string   `json:"version"`
	Agents  []string `json:"agents"`
	// Routes lists each agent's routes (/scheduler/predicates/x, /scheduler/priorities/y).
	Routes map[string][]string `json:"routes"`
}

// Version calls GET /version.
func (c ExtenderClient) Version(ctx context.Context) (VersionInfo, error) {
	var v VersionInfo
	status, body, err := c.Get(ctx, "/version")
	if err != nil {
		return v, err
	}
	if status != http.StatusOK {
		return v, fmt.Errorf("GET /version: status %d: %s", status, body)
	}
	return v, json.Unmarshal(body, &v)
}
