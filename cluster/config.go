// Package cluster gives a process a read-only, informer-backed view of the cluster: the nodes,
// the non-terminated pods and, per node, the summed requests of the pods bound to it. One Cache
// serves every agent of the extender (through framework.Cluster) and the node annotator.
//
// Cluster access is optional. Config decides how the API server is reached: a kubeconfig file
// (--kubeconfig or KUBECONFIG), the pod's service account when running in a pod, or not at all.
package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-safe-scheduler/extender/settings"
)

// Access modes.
const (
	// AccessAuto uses the kubeconfig when one is given, else the pod's service account when the
	// process runs in a pod, else runs without cluster access.
	AccessAuto = "auto"
	// AccessNone never contacts the API server, even in a pod or with a kubeconfig.
	AccessNone = "none"
)

// Config says how to reach the API server.
type Config struct {
	// Access is AccessAuto or AccessNone (CLUSTER_ACCESS).
	Access string
	// Kubeconfig is the path of a kubeconfig file, or several joined by the path list separator
	// as in KUBECONFIG (merged the way kubectl merges them). Empty: none (KUBECONFIG).
	Kubeconfig string
	// Context is the kubeconfig context to use; empty means the file's current context
	// (KUBE_CONTEXT).
	Context string
	// QPS and Burst bound the client's request rate (KUBE_API_QPS, KUBE_API_BURST).
	QPS   float64
	Burst int
}

// Default client rate: informers make few requests (a list, then a watch per resource), so these
// matter mostly for the annotator's patches.
const (
	DefaultQPS   = 20
	DefaultBurst = 40
)

// Declare adds the cluster access settings, with their defaults, to s.
func (c *Config) Declare(s *settings.Set) {
	s.Enum(&c.Access, "CLUSTER_ACCESS", "cluster-access", AccessAuto, []string{AccessAuto, AccessNone},
		"how to reach the API server: auto uses the kubeconfig if one is given, else the pod's service account "+
			"when running in a pod, else nothing; none never contacts it")
	s.String(&c.Kubeconfig, "KUBECONFIG", "kubeconfig", "",
		"kubeconfig file(s) for cluster access outside a pod (empty: the service account in a pod, else none)", checkKubeconfig)
	s.String(&c.Context, "KUBE_CONTEXT", "kube-context", "",
		"kubeconfig context to use (empty: the current context)", nil)
	s.Float(&c.QPS, "KUBE_API_QPS", "kube-api-qps", DefaultQPS, 0.1, 10000,
		"sustained requests per second to the API server")
	s.Int(&c.Burst, "KUBE_API_BURST", "kube-api-burst", DefaultBurst, 1, 100000,
		"burst of requests to the API server above the sustained rate")
}

// checkKubeconfig requires every listed file to exist, so that a typo stops the program at start
// instead of leaving it without cluster access.
func checkKubeconfig(v string) error {
	for _, p := range filepath.SplitList(v) {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("cannot read kubeconfig file: %w", err)
		}
	}
	return nil
}

// RESTConfig returns the client configuration for c, or nil (and no error) when c gives no
// cluster access: Access is none, or no kubeconfig is given and the process is not in a pod.
// userAgent identifies the program in the API server's logs and audit.
func (c Config) RESTConfig(userAgent string) (*rest.Config, error) {
	if c.Access == AccessNone {
		return nil, nil
	}
	var cfg *rest.Config
	var err error
	if paths := nonEmpty(filepath.SplitList(c.Kubeconfig)); len(paths) > 0 {
		rules := &clientcmd.ClientConfigLoadingRules{Precedence: paths}
		if len(paths) == 1 {
			rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: paths[0]}
		}
		overrides := &clientcmd.ConfigOverrides{CurrentContext: c.Context}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", c.Kubeconfig, err)
		}
	} else {
		cfg, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("loading the in-cluster configuration: %w", err)
		}
	}
	cfg.QPS = float32(c.QPS)
	cfg.Burst = c.Burst
	cfg.UserAgent = userAgent
	// Protobuf halves decoding time and allocation for core objects, which is most of what an
	// informer's initial list costs at 50,000 pods.
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return cfg, nil
}

// Client returns a clientset for cfg.
func Client(cfg *rest.Config) (kubernetes.Interface, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the Kubernetes client for %s: %w", cfg.Host, err)
	}
	return cs, nil
}

func nonEmpty(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
