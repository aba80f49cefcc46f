package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-safe-scheduler/extender/settings/settingstest"
)

const kubeconfigYAML = `apiVersion: v1
kind: Config
clusters:
- name: one
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
- name: two
  cluster: {server: "https://127.0.0.2:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: abc}
contexts:
- name: first
  context: {cluster: one, user: u}
- name: second
  context: {cluster: two, user: u}
current-context: first
`

func writeKubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(kubeconfigYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigSettings(t *testing.T) {
	kc := writeKubeconfig(t)
	c, err := settingstest.Parse[Config](map[string]string{"KUBECONFIG": kc, "KUBE_API_QPS": "50", "KUBE_API_BURST": "100"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Access != AccessAuto || c.Kubeconfig != kc || c.QPS != 50 || c.Burst != 100 {
		t.Errorf("parsed %+v", c)
	}
	rc, err := c.RESTConfig("test/1")
	if err != nil {
		t.Fatal(err)
	}
	if rc == nil || rc.Host != "https://127.0.0.1:6443" || rc.QPS != 50 || rc.Burst != 100 || rc.UserAgent != "test/1" {
		t.Errorf("REST config %+v", rc)
	}

	// The context flag picks another cluster.
	c, _ = settingstest.Parse[Config](nil, "--kubeconfig", kc, "--kube-context", "second")
	if rc, err := c.RESTConfig("x"); err != nil || rc.Host != "https://127.0.0.2:6443" {
		t.Errorf("with --kube-context second: %v, %v", rc, err)
	}

	// none wins over a kubeconfig.
	c, _ = settingstest.Parse[Config](map[string]string{"KUBECONFIG": kc, "CLUSTER_ACCESS": "none"})
	if rc, err := c.RESTConfig("x"); rc != nil || err != nil {
		t.Errorf("CLUSTER_ACCESS=none gave %v, %v", rc, err)
	}
}

func TestConfigErrorsNameTheSetting(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"KUBECONFIG": "/does/not/exist"}, "KUBECONFIG"},
		{map[string]string{"KUBE_API_QPS": "0"}, "KUBE_API_QPS"},
		{map[string]string{"KUBE_API_BURST": "many"}, "KUBE_API_BURST"},
		{map[string]string{"CLUSTER_ACCESS": "sometimes"}, "CLUSTER_ACCESS"},
	}
	for _, c := range cases {
		_, err := settingstest.Parse[Config](c.env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v does not name %s", c.env, err, c.want)
		}
	}
}

// Outside a pod and without a kubeconfig there is no cluster access, and that is not an error.
func TestConfigNoAccess(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	rc, err := Config{Access: AccessAuto, QPS: 1, Burst: 1}.RESTConfig("x")
	if rc != nil || err != nil {
		t.Errorf("RESTConfig = %v, %v; want nil, nil", rc, err)
	}
	s, err := Connect(Config{Access: AccessAuto, QPS: 1, Burst: 1}, quietLog(), "x")
	if s != nil || err != nil {
		t.Errorf("Connect = %v, %v; want nil, nil", s, err)
	}
}

// A kubeconfig that is present but broken is an error at start, not a silent "no access".
func TestConfigBrokenKubeconfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte("this: [is not a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (Config{Access: AccessAuto, Kubeconfig: p, QPS: 1, Burst: 1}).RESTConfig("x"); err == nil {
		t.Error("a broken kubeconfig gave no error")
	}
}
