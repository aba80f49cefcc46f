package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// TestLoad is the load run: one extender process (every agent, full-node requests), 8
// concurrent clients, 10,000 requests over every route with 10 to 1000 realistic nodes each.
// Every request must be answered 200, and the process's resident memory at the end must be
// within 20 % of its value after the first 1000 requests (no leak, no unbounded buffer pool).
// It takes about a minute; make test and make bench run it (LOAD_TEST=1).
func TestLoad(t *testing.T) {
	if os.Getenv("LOAD_TEST") == "" {
		t.Skip("set LOAD_TEST=1 (make test and make bench do) to run the load test")
	}
	const clients, total, checkpoint = 8, 10_000, 1000

	bin := filepath.Join(t.TempDir(), "extender")
	build := exec.Command("go", "build", "-tags", "all", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the extender: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs bytes.Buffer
	cmd := exec.Command(bin)
	cmd.Env = []string{"HTTP_PORT=" + addr, "CLUSTER_ACCESS=none", "LOG_LEVEL=WARNING"}
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	base := "http://" + addr
	waitReady(t, base)

	// Bodies: each route at each size, prepared once.
	routes := []string{
		"predicates/safe-overload", "priorities/safe-overload", "priorities/safe-balance",
		"priorities/congestion", "priorities/pigeon-holing", "predicates/template-label", "priorities/template-score",
	}
	sizes := []int{10, 100, 500, 1000}
	all := nodes(sizes[len(sizes)-1])
	type request struct {
		route string
		body  []byte
	}
	var requests []request
	for _, n := range sizes {
		for k, r := range routes {
			body, _ := json.Marshal(extenderv1.ExtenderArgs{
				Pod:   fixtures.Pod(fmt.Sprintf("p-%d-%d", n, k), "250m", "512Mi"),
				Nodes: &corev1.NodeList{Items: all[:n]},
			})
			requests = append(requests, request{r, body})
		}
	}

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var next, failures atomic.Int64
	var firstErr atomic.Value
	var rssAtCheckpoint atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > total {
					return
				}
				// Sizes mixed by a fixed stride, so every stretch of requests has every size.
				req := requests[(i*7919)%int64(len(requests))]
				resp, err := client.Post(base+"/scheduler/"+req.route, "application/json", bytes.NewReader(req.body))
				if err == nil {
					var sink bytes.Buffer
					_, err = sink.ReadFrom(resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("%s: status %d: %.200s", req.route, resp.StatusCode, sink.String())
					}
				}
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
				if i == checkpoint {
					rssAtCheckpoint.Store(rss(t, cmd.Process.Pid))
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	end := rss(t, cmd.Process.Pid)
	at := rssAtCheckpoint.Load()
	t.Logf("%d requests, %d clients, %.1f s (%.0f requests/s); errors %d; RSS after %d requests %.1f MiB, at the end %.1f MiB (%+.1f %%)",
		total, clients, elapsed.Seconds(), float64(total)/elapsed.Seconds(), failures.Load(), checkpoint,
		float64(at)/(1<<20), float64(end)/(1<<20), 100*float64(end-at)/float64(at))
	if n := failures.Load(); n > 0 {
		t.Errorf("%d of %d requests failed; first: %v\nextender log:\n%s", n, total, firstErr.Load(), logs.String())
	}
	if float64(end) > 1.2*float64(at) {
		t.Errorf("resident memory grew from %d to %d bytes, more than 20 %%", at, end)
	}
}

func waitReady(t *testing.T, base string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the extender did not become ready")
}

// rss returns a process's resident memory in bytes, from /proc.
func rss(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
