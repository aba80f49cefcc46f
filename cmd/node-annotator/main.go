// Command node-annotator writes the node annotations the extender's agents read: each node's
// allocation (requested-*, free-*) and its usage statistics (mean-free-*, std-free-*,
// forcasted-free-*, statistics-timestamp) from Prometheus or the metrics API. It only wires;
// the work is in package annotator.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sirupsen/logrus"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/kube-safe-scheduler/extender/annotator"
	"github.com/kube-safe-scheduler/extender/cluster"
	"github.com/kube-safe-scheduler/extender/internal/memlimit"
	"github.com/kube-safe-scheduler/extender/settings"
	"github.com/kube-safe-scheduler/extender/usage"
	"github.com/kube-safe-scheduler/extender/usage/metricsource"
	"github.com/kube-safe-scheduler/extender/workload"
)

// version is stamped at build time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.LookupEnv, os.Stderr))
}

func run(ctx context.Context, args []string, getenv func(string) (string, bool), stderr io.Writer) int {
	fs := flag.NewFlagSet("node-annotator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: node-annotator [flags]\n\n"+
			"Writes node annotations for the kube-safe-scheduler agents: allocation (requested-*, free-*) every INTERVAL,\n"+
			"usage statistics (mean-free-*, std-free-*, forcasted-free-*, statistics-timestamp) every STATS_INTERVAL.\n"+
			"Each flag may also be set by the environment variable named in its help; a flag wins over its variable.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	set := settings.New(fs, getenv)
	var cfg annotator.Config
	cfg.Declare(set)
	var learnerCfg usage.Settings
	learnerCfg.Declare(set)
	var clusterCfg cluster.Config
	clusterCfg.Declare(set)
	// Every bad setting at once: those that do not parse, and the combinations.
	err := set.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err := errors.Join(err, cfg.Validate(), learnerCfg.Validate(cfg.Source)); err != nil {
		fmt.Fprintf(stderr, "configuration error:\n%v\n", err)
		return 2
	}

	log := cfg.Log.New(stderr)
	for _, w := range set.Warnings() {
		log.Warn(w)
	}
	log.Info(memlimit.Apply())
	cluster.RouteKlog(log)

	state, err := cluster.Connect(clusterCfg, log.WithField("component", "cluster"), "kube-safe-scheduler-node-annotator/"+version)
	if err != nil {
		fmt.Fprintf(stderr, "configuration error:\ncluster access: %v\n", err)
		return 2
	}
	if state == nil {
		fmt.Fprintln(stderr, "configuration error:\nthe node annotator needs cluster access: set KUBECONFIG (or --kubeconfig), "+
			"or run it in a pod, and do not set CLUSTER_ACCESS=none")
		return 2
	}
	source, err := newSource(cfg, learnerCfg, state)
	if err != nil {
		fmt.Fprintf(stderr, "configuration error:\n%v\n", err)
		return 2
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a, err := annotator.New(cfg, state, state.Client(), source, log.WithField("component", "annotator"), reg)
	if err != nil {
		fmt.Fprintf(stderr, "configuration error:\n%v\n", err)
		return 2
	}

	var learner *usage.Runner
	if learnerCfg.Enabled {
		if learner, err = newLearner(learnerCfg, source, state, reg, log.WithField("component", "usage-learner")); err != nil {
			fmt.Fprintf(stderr, "configuration error:\n%v\n", err)
			return 2
		}
	}

	if cfg.Listen != "" {
		ln, err := net.Listen("tcp", settings.ListenAddress(cfg.Listen))
		if err != nil {
			log.Errorf("cannot listen (HTTP_PORT or --listen %q): %v", cfg.Listen, err)
			return 1
		}
		srv := &http.Server{Handler: annotator.Handler(state.HasSynced, reg), ReadHeaderTimeout: 5 * time.Second,
			WriteTimeout: 30 * time.Second, MaxHeaderBytes: 1 << 16}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Errorf("probe server stopped: %v", err)
			}
		}()
		defer func() {
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutdown)
		}()
		log.WithField("address", ln.Addr().String()).Info("serving /healthz, /readyz and /metrics")
	}

	stopCluster := state.Start(ctx)
	defer stopCluster()
	if learner != nil {
		if err := learner.Start(ctx); err != nil {
			log.Errorf("usage learner: %v", err)
			return 1
		}
	}
	sourceName := "none"
	if source != nil {
		sourceName = source.Name()
	}
	log.WithFields(logrus.Fields{"version": version, "source": sourceName, "interval": cfg.Interval,
		"statsInterval": cfg.StatsInterval, "window": cfg.Window, "usageLearner": learnerCfg.Enabled}).Info("node annotator started")
	if err := a.Run(ctx); err != nil {
		log.Errorf("annotator stopped: %v", err)
		return 1
	}
	log.Info("node annotator stopped")
	return 0
}

// newSource returns the usage source STATS_SOURCE selects, or nil for none: one source that
// the annotator reads nodes from and the learner pods.
func newSource(cfg annotator.Config, lc usage.Settings, state *cluster.Cache) (metricsource.Source, error) {
	switch cfg.Source {
	case annotator.SourcePrometheus:
		pc := cfg.Prometheus
		pc.Window = cfg.Window
		pc.PodCPUQuery, pc.PodMemoryQuery = lc.CPUQuery, lc.MemoryQuery
		return metricsource.NewPrometheus(pc)
	case annotator.SourceMetricsAPI:
		metrics, err := metricsclient.NewForConfig(state.RESTConfig())
		if err != nil {
			return nil, fmt.Errorf("metrics API client: %w", err)
		}
		return metricsource.NewMetricsAPI(metrics, cfg.Window), nil
	}
	return nil, nil
}

// newLearner builds the usage learner on the program's usage source, cluster cache (its pod
// informer, and ReplicaSet and Job informers for the owner chains) and metrics registry. Its
// informers start with the cache's.
func newLearner(lc usage.Settings, source usage.Source, state *cluster.Cache, reg prometheus.Registerer,
	log *logrus.Entry) (*usage.Runner, error) {
	if source == nil {
		return nil, errors.New("usage learner: no source (STATS_SOURCE none)")
	}
	f := state.Informers()
	owners := workload.Listers{ReplicaSets: f.Apps().V1().ReplicaSets().Lister(), Jobs: f.Batch().V1().Jobs().Lister()}
	l, err := usage.New(lc.Learner(), owners)
	if err != nil {
		return nil, err
	}
	return &usage.Runner{Learner: l, Source: source, Pods: f.Core().V1().Pods().Lister(),
		Store: usage.NewStore(lc.Store, state.Client(), log, l), Metrics: usage.NewMetrics(reg),
		Interval: lc.Interval, Log: log}, nil
}
