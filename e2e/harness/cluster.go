package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// StartTimeout bounds the wait for a control plane component to become ready. kube-apiserver
// needs several seconds on an idle machine and much more on a loaded one.
const StartTimeout = 3 * time.Minute

// AdminUser is the user name of the cluster's admin kubeconfig (group system:masters).
const AdminUser = "e2e-admin"

// Cluster is a running etcd and kube-apiserver on loopback, without kubelets or controllers:
// nodes are plain API objects and pods never run, they are only scheduled.
type Cluster struct {
	// Dir holds the cluster's certificates, kubeconfigs, etcd data and process logs.
	Dir string
	// Kubeconfig is the path of a kubeconfig for an admin (group system:masters).
	Kubeconfig string
	// Config is the admin's client configuration.
	Config *rest.Config
	// Client is a clientset for the admin.
	Client kubernetes.Interface
	// Binaries are the control plane executables in use.
	Binaries Binaries

	ca        *authority
	etcdURL   string
	apiPort   int
	apiArgs   []string
	logDir    string
	mu        sync.Mutex
	apiserver *Process
	etcd      *Process
	kubeconfs map[string]string
}

// ClusterOptions adjust a cluster started with StartClusterWith.
type ClusterOptions struct {
	// APIServerArgs are extra kube-apiserver flags, appended to the harness's own (a later
	// flag wins).
	APIServerArgs []string
}

// StartCluster builds the control plane if needed (ControlPlane), starts etcd and
// kube-apiserver on free loopback ports, waits until the API server is ready and returns the
// cluster. Both processes are stopped when t's cleanups run.
func StartCluster(t T) *Cluster {
	t.Helper()
	return StartClusterWith(t, ClusterOptions{})
}

// StartClusterWith is StartCluster with options.
func StartClusterWith(t T, opts ClusterOptions) *Cluster {
	t.Helper()
	bins := ControlPlane(t)
	dir := t.TempDir()
	c := &Cluster{Dir: dir, Binaries: bins, logDir: LogDir(t), kubeconfs: map[string]string{}}
	t.Cleanup(func() {
		c.mu.Lock()
		procs := []*Process{c.apiserver, c.etcd}
		c.mu.Unlock()
		for _, p := range procs {
			if p == nil {
				continue
			}
			p.Stop()
			if t.Failed() {
				t.Logf("--- last lines of %s's log (%s%s):\n%s", p.Name, p.LogPath, keepHint(), p.Tail(20))
			}
		}
	})
	if err := c.writePKI(); err != nil {
		t.Fatalf("cluster certificates: %v", err)
	}
	c.startEtcd(t)

	for attempt := 1; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		c.apiPort = port
		c.kubeconfs = map[string]string{} // they name the port
		c.apiArgs = c.apiserverArgs(opts.APIServerArgs)
		if err := c.writeAdminConfig(); err != nil {
			t.Fatalf("admin kubeconfig: %v", err)
		}
		err = c.launchAPIServer(t.Context())
		if err == nil {
			break
		}
		c.mu.Lock()
		p := c.apiserver
		c.mu.Unlock()
		if attempt < 3 && p != nil && p.Exited() && addressInUse(p) {
			t.Logf("kube-apiserver: port %d was taken, retrying on another", port)
			continue
		}
		t.Fatalf("%v", err)
	}
	return c
}

func (c *Cluster) writePKI() error {
	ca, err := newAuthority()
	if err != nil {
		return err
	}
	c.ca = ca
	cert, key, err := ca.issue("kube-apiserver", nil, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 96, 0, 1)},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}, true)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"ca.crt": ca.certPEM, "apiserver.crt": cert, "apiserver.key": key} {
		if err := os.WriteFile(filepath.Join(c.Dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return writeServiceAccountKey(filepath.Join(c.Dir, "sa.key"), filepath.Join(c.Dir, "sa.pub"))
}

func (c *Cluster) startEtcd(t T) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		ports, err := FreePorts(2)
		if err != nil {
			t.Fatalf("free ports for etcd: %v", err)
		}
		clientPort, peerPort := ports[0], ports[1]
		c.etcdURL = "http://127.0.0.1:" + strconv.Itoa(clientPort)
		peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
		dataDir := filepath.Join(c.Dir, "etcd-data")
		os.RemoveAll(dataDir)
		p, err := startProcess("etcd", c.logDir, c.Binaries.Etcd, nil,
			"--name=e2e",
			"--data-dir="+dataDir,
			"--listen-client-urls="+c.etcdURL,
			"--advertise-client-urls="+c.etcdURL,
			"--listen-peer-urls="+peerURL,
			"--initial-advertise-peer-urls="+peerURL,
			"--initial-cluster=e2e="+peerURL,
			"--unsafe-no-fsync",
			"--log-level=warn",
		)
		if err != nil {
			t.Fatalf("starting etcd: %v", err)
		}
		c.mu.Lock()
		c.etcd = p
		c.mu.Unlock()
		err = waitUntil(t.Context(), StartTimeout, p, func(ctx context.Context) bool {
			return httpOK(ctx, http.DefaultClient, c.etcdURL+"/health")
		})
		if err == nil {
			return
		}
		if attempt < 3 && p.Exited() && addressInUse(p) {
			t.Logf("etcd: port %d or %d was taken, retrying on others", clientPort, peerPort)
			continue
		}
		t.Fatalf("etcd did not become healthy: %v\n%s", err, p.Tail(30))
	}
}

func (c *Cluster) apiserverArgs(extra []string) []string {
	f := func(name string) string { return filepath.Join(c.Dir, name) }
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.apiPort),
		"--tls-cert-file=" + f("apiserver.crt"),
		"--tls-private-key-file=" + f("apiserver.key"),
		"--client-ca-file=" + f("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + f("sa.pub"),
		"--service-account-signing-key-file=" + f("sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=RBAC",
		// No controller manager runs, so nothing creates the default service accounts the
		// ServiceAccount admission plugin would require for every pod.
		"--disable-admission-plugins=ServiceAccount",
		// The loopback address is not a valid endpoint for the kubernetes service.
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--v=1",
	}
	return append(args, extra...)
}

// launchAPIServer starts kube-apiserver with c.apiArgs and waits until /readyz answers ok.
func (c *Cluster) launchAPIServer(ctx context.Context) error {
	p, err := startProcess("kube-apiserver", c.logDir, c.Binaries.APIServer, nil, c.apiArgs...)
	if err != nil {
		return fmt.Errorf("starting kube-apiserver: %w", err)
	}
	c.mu.Lock()
	c.apiserver = p
	c.mu.Unlock()
	err = waitUntil(ctx, StartTimeout, p, func(ctx context.Context) bool {
		body, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && strings.TrimSpace(string(body)) == "ok"
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver did not become ready: %w\n%s", err, p.Tail(30))
	}
	return nil
}

func (c *Cluster) writeAdminConfig() error {
	path, err := c.kubeconfigFor(AdminUser, []string{"system:masters"})
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 200, 400
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	c.Kubeconfig, c.Config, c.Client = path, cfg, client
	return nil
}

// Server returns the API server's URL (https://127.0.0.1:<port>).
func (c *Cluster) Server() string { return "https://127.0.0.1:" + strconv.Itoa(c.apiPort) }

// KubeconfigFor writes (once per user) and returns the path of a kubeconfig that authenticates
// to the cluster with a client certificate as user, member of groups. Use it to run a component
// under the identity a deployment gives it, e.g. "system:serviceaccount:kube-system:my-scheduler"
// with groups "system:serviceaccounts" and "system:serviceaccounts:kube-system", so that RBAC is
// checked as in a real cluster.
func (c *Cluster) KubeconfigFor(t T, user string, groups ...string) string {
	t.Helper()
	path, err := c.kubeconfigFor(user, groups)
	if err != nil {
		t.Fatalf("kubeconfig for %s: %v", user, err)
	}
	return path
}

func (c *Cluster) kubeconfigFor(user string, groups []string) (string, error) {
	key := user + "\x00" + strings.Join(groups, ",")
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.kubeconfs[key]; ok {
		return p, nil
	}
	cert, keyPEM, err := c.ca.issue(user, groups, nil, nil, false)
	if err != nil {
		return "", err
	}
	name := strings.NewReplacer(":", "_", "/", "_", " ", "_").Replace(user)
	path := filepath.Join(c.Dir, fmt.Sprintf("%s-%d.kubeconfig", name, c.apiPort))
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.Server(), CertificateAuthorityData: c.ca.certPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: keyPEM}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", err
	}
	c.kubeconfs[key] = path
	return path, nil
}

// StopAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after StopTimeout) and leaves etcd
// running; StartAPIServer brings it back on the same port with the same data. Clients and
// informers see the API server go away as in a real outage.
func (c *Cluster) StopAPIServer(t T) {
	t.Helper()
	c.mu.Lock()
	p := c.apiserver
	c.mu.Unlock()
	if p == nil {
		t.Fatalf("StopAPIServer: no API server is running")
	}
	p.Stop()
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the same port, with the same
// flags and etcd data, and waits until it is ready. It fails t if the server is still running.
func (c *Cluster) StartAPIServer(t T) {
	t.Helper()
	c.mu.Lock()
	p := c.apiserver
	c.mu.Unlock()
	if p != nil && !p.Exited() {
		t.Fatalf("StartAPIServer: the API server is still running (call StopAPIServer first)")
	}
	deadline := time.Now().Add(StartTimeout)
	for {
		err := c.launchAPIServer(t.Context())
		if err == nil {
			return
		}
		c.mu.Lock()
		p := c.apiserver
		c.mu.Unlock()
		// The port may linger for a moment after the previous server's exit.
		if time.Now().Before(deadline) && p.Exited() && addressInUse(p) {
			time.Sleep(time.Second)
			continue
		}
		t.Fatalf("%v", err)
	}
}

// APIServerRunning reports whether the API server process is running.
func (c *Cluster) APIServerRunning() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.apiserver != nil && !c.apiserver.Exited()
}

// waitUntil polls ok (see poll) until it returns true, p exits, ctx ends or timeout passes.
func waitUntil(ctx context.Context, timeout time.Duration, p *Process, ok func(context.Context) bool) error {
	err := poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		if ok(ctx) {
			return true, nil
		}
		select {
		case <-p.Done():
			return false, fmt.Errorf("%s exited: %v", p.Name, p.exitError())
		default:
			return false, nil
		}
	})
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: not ready after %s", p.Name, timeout)
	}
	return err
}

// httpOK reports whether GET url answers 200.
func httpOK(ctx context.Context, client *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
