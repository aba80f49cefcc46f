package harness

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// PrometheusBinary returns the Prometheus server to run: PROMETHEUS_BIN, or prometheus on PATH
// (Debian's package, which hack/install-prometheus.sh installs).
func PrometheusBinary() (string, error) {
	if b := os.Getenv("PROMETHEUS_BIN"); b != "" {
		return b, nil
	}
	b, err := exec.LookPath("prometheus")
	if err != nil {
		return "", fmt.Errorf("no Prometheus server (PROMETHEUS_BIN or prometheus on PATH); run hack/install-prometheus.sh")
	}
	return b, nil
}

// StartPrometheus runs the Prometheus server bin on a free loopback port with the configuration
// config (prometheus.yml's text) and returns its URL once it answers ready. A server that is not
// ready within readyWithin (another process took the port, say) is stopped and started again on
// another port, three times at most.
func StartPrometheus(t T, bin, config string, readyWithin time.Duration) string {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatalf("%v", err)
	}
	for attempt := 0; ; attempt++ {
		addr := "127.0.0.1:" + strconv.Itoa(MustFreePort(t))
		p := StartProcess(t, "prometheus", LogDir(t), bin, nil,
			"--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data-"+strconv.Itoa(attempt)),
			"--web.listen-address="+addr, "--log.level=warn")
		deadline := time.Now().Add(readyWithin)
		for !p.Exited() && time.Now().Before(deadline) {
			if resp, err := http.Get("http://" + addr + "/-/ready"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return "http://" + addr
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		p.Stop()
		if attempt == 2 {
			t.Fatalf("Prometheus never became ready:\n%s", p.Tail(20))
		}
	}
}
