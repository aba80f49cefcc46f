package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// TestGeneratedAndConvertedConfigsLoad: the KubeSchedulerConfigurations that `extender config`
// and `extender convert-policy` print (the latter for the Policy files of
// internal/deploygen/schedconfig/testdata: telemetry-aware-scheduling's, a generals-space style one with
// filter, prioritize, preempt and bind, and one with predicate and priority lists) are loaded
// by the real kube-scheduler, which starts and turns healthy (/healthz on its secure port), and
// leads on the Lease of its own profile, never kube-system/kube-scheduler (the default
// scheduler's, which kube-scheduler takes when leaderElection does not name another: issue 49).
// The files their tlsConfig names are test-made certificates, and each configuration's profile
// and Lease are given the sub-test's name, as the output's comment tells a user to (the converted
// ones are all my-scheduler, whose Lease an earlier sub-test's stopped scheduler holds for 15 s);
// nothing else is changed. TestGeneratedConfigAsDeployed runs the generated ones beside a
// default scheduler.
func TestGeneratedAndConvertedConfigsLoad(t *testing.T) {
	t.Parallel()
	bin := harness.BuildExtender(t, "all")
	c := harness.StartCluster(t)
	client := harness.NewTestCA(t).Secret(t, "my-scheduler", false)
	certs := t.TempDir()
	for k, v := range client {
		if err := os.WriteFile(filepath.Join(certs, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	local := map[string]string{"certFile": "tls.crt", "keyFile": "tls.key", "caFile": "ca.crt"}
	testdata := filepath.Join(repoRoot(t), "internal", "deploygen", "schedconfig", "testdata")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"config-safe-congestion", []string{"config", "--agents", "safe,congestion", "--node-cache"}},
		{"config-every-agent-https", []string{"config", "--agents", "safe,congestion,pigeon,template", "--https", "--scheduler-name", "https-scheduler"}},
		{"policy-tas", []string{"convert-policy", filepath.Join(testdata, "tas-policy.json")}},
		{"policy-generals", []string{"convert-policy", filepath.Join(testdata, "generals-scheduler-policy.json")}},
		{"policy-classic", []string{"convert-policy", filepath.Join(testdata, "classic-policy.yaml")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(t.Context(), bin, tc.args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("extender %s: %v\n%s", strings.Join(tc.args, " "), err, stderr.String())
			}
			if stderr.Len() > 0 {
				t.Logf("extender %s reports:\n%s", tc.args[0], stderr.String())
			}
			var m map[string]any
			if err := yaml.Unmarshal(stdout.Bytes(), &m); err != nil {
				t.Fatalf("output is not YAML: %v\n%s", err, stdout.String())
			}
			exts, _ := m["extenders"].([]any)
			if len(exts) == 0 {
				t.Fatalf("no extender in:\n%s", stdout.String())
			}
			for _, e := range exts {
				tls, _ := e.(map[string]any)["tlsConfig"].(map[string]any)
				for field, file := range local {
					if _, ok := tls[field]; ok {
						tls[field] = filepath.Join(certs, file)
					}
				}
			}
			if name, lease := profileAndLease(t, stdout.Bytes()); lease != name || lease == "kube-scheduler" {
				t.Fatalf("profile %s leads on kube-system/%s: want its own Lease, named after it\n%s", name, lease, stdout.String())
			}
			m["leaderElection"].(map[string]any)["resourceName"] = tc.name
			m["profiles"].([]any)[0].(map[string]any)["schedulerName"] = tc.name
			cfg, err := yaml.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			s := c.StartScheduler(t, harness.SchedulerOptions{Name: "kube-scheduler " + tc.name, Config: cfg})
			waitForLease(t, c, tc.name)
			t.Logf("kube-scheduler healthy on port %d, leading on kube-system/%s, with:\n%s", s.Port, tc.name, cfg)
		})
	}
	if _, err := c.Client.CoordinationV1().Leases("kube-system").Get(t.Context(), "kube-scheduler", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("kube-system/kube-scheduler, the default scheduler's Lease, was taken (%v): no scheduler here may use it", err)
	}
}
