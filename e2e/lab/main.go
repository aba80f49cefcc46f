// Command eval is the placement quality lab (make eval): it replays seeded workloads on a
// cluster of fake nodes run by kwok against the real etcd, kube-apiserver and kube-scheduler of
// the harness, once per scheduler (kube-scheduler's own strategies, the agents as extenders and
// as plugins), with pods whose true usage differs from their requests. Node usage goes through
// the path a user runs: a Prometheus exporter, Prometheus, the node annotator, the node
// annotations the agents read. It writes a table (markdown, CSV) and plots to a folder.
// docs/quality.md explains the figures and shows the latest run.
//
// Pods belong to workloads (label app.kubernetes.io/name, an owner reference to a ReplicaSet or
// a Job) and use what public cluster traces say (-usage trace, the default: fixtures in
// e2e/testdata/traces) or what the lab's own model draws (-usage synthetic).
//
//	go run ./lab -nodes 200 -minutes 240 -seeds 1,2,3 [-schedulers defaults,safe] [-workloads steady,burst] [-usage trace|synthetic] [-out dir]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// defaultSchedulers is -schedulers' default: every scheduler defaultOnly names
// (TestDefaultOnlyRunsByDefault), since -only narrows -schedulers and never adds to it.
const defaultSchedulers = "defaults,oracle,workload-level,most-allocated,balanced,safe,safe-learn,defaults+descheduler,safe+descheduler,pigeon-abp,pigeon-lb,pigeon-cons,pigeon-fewest,reward,gang,plugins-safe,plugins-gang,trimaran-tlp,trimaran-lvrb"

// defaultOnly pairs each workload with the schedulers it is meant to compare.
const defaultOnly = "steady=defaults,oracle,workload-level,most-allocated,balanced,safe,safe-learn,pigeon-abp,pigeon-lb,pigeon-cons,pigeon-fewest,plugins-safe,trimaran-tlp,trimaran-lvrb,defaults+descheduler,safe+descheduler;" +
	"burst=defaults,oracle,workload-level,most-allocated,safe,safe-learn,defaults+descheduler,safe+descheduler,plugins-safe,trimaran-tlp,trimaran-lvrb;reward=defaults,reward;gang=defaults,gang,plugins-gang"

func main() {
	nodes := flag.Int("nodes", 200, "nodes in the cluster (16 cpu, 64 GiB each)")
	minutes := flag.Float64("minutes", 240, "simulated minutes per run")
	warmup := flag.Float64("warmup", 30, "simulated minutes at the start of a run left out of the figures")
	meanRun := flag.Float64("mean-run", 30, "pods' mean run time, simulated minutes")
	speed := flag.Float64("speed", 10, "simulated seconds per real second (faster makes the pods of a 200-node run live longer than given on two cores: the report's pod run / given says)")
	seedList := flag.String("seeds", "1,2,3", "comma-separated seeds; each seed is one workload, the same for every scheduler")
	schedList := flag.String("schedulers", defaultSchedulers, "comma-separated schedulers")
	workList := flag.String("workloads", "steady,burst,reward,gang", "comma-separated workloads")
	only := flag.String("only", defaultOnly, "per-workload scheduler subsets, workload=scheduler,...;... (a workload not named runs every scheduler of -schedulers); empty: every scheduler on every workload")
	out := flag.String("out", "", "folder for the table and plots (default: <repo>/.cache/eval/<UTC time>)")
	mergeList := flag.String("merge", "", "comma-separated results.csv files of earlier runs, each path[:old=new...] to rename its schedulers: "+
		"write their merged table, medians, ratios and overload bars into -out (a later file's row replaces an earlier one of the same "+
		"workload, scheduler and seed), and run nothing")
	usage := flag.String("usage", UsageTrace, "pods' true usage: trace (Google 2011 task ratios, PlanetLab daily shapes; docs/quality.md) or synthetic (the lab's own model)")
	cpuScale := flag.Float64("trace-cpu-scale", DefaultCPUScale, "-usage trace: factor on every task's cpu usage/request ratio")
	traceDay := flag.String("trace-day", DefaultTraceDay, "-usage trace: the PlanetLab day whose VMs shape the pods' cpu over time (a fixture planetlab-<day>.csv in -traces: 20110303, 20110322)")
	traceDir := flag.String("traces", "", "-usage trace: folder of the trace fixtures (default: <repo>/e2e/testdata/traces)")
	ownerObjects := flag.Bool("owner-objects", false, "create each service workload's ReplicaSet (no replicas), so that kube-scheduler's default spreading sees a pod's siblings as in a cluster; without it pods carry only the owner reference")
	parallel := flag.Int("parallel", 1, "runs at once, each on its own control plane; a 50-node run at -speed 20 takes about 0.65 of a core, so 2 suit two cores (each run's pod run / given and longest sample gap say whether it kept up)")
	estimate := flag.Bool("estimate", false, "print how well requests and workload history predict the pods' usage for -workloads and -seeds, and run nothing")
	predictors := flag.Bool("predictors", false, "print how peak predictors (safe's Beta risk, Take it to the Limit's) judge the nodes of a requests-based placement of -workloads and -seeds against what their pods then use, and what the trace days say of a daily shape; run nothing")
	flag.Parse()

	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "eval: "+format+"\n", args...)
		os.Exit(2)
	}
	// traces is -traces, or the repository's fixtures when it is empty.
	traces := func() string {
		if *traceDir != "" {
			return *traceDir
		}
		dir, err := tracesDir()
		if err != nil {
			fail("-traces is empty and the repository's fixtures cannot be found: %v", err)
		}
		return dir
	}
	if *mergeList != "" {
		if *out == "" {
			fail("-merge needs -out, the folder to write the merged report into")
		}
		if err := merge(strings.Split(*mergeList, ","), *out); err != nil {
			fail("-merge: %v", err)
		}
		md, _ := os.ReadFile(filepath.Join(*out, "results.md"))
		os.Stdout.Write(md)
		return
	}
	var seeds []uint64
	for _, f := range strings.Split(*seedList, ",") {
		s, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			fail("-seeds: %q is not a seed", f)
		}
		seeds = append(seeds, s)
	}
	var scheds []Scheduler
	for _, n := range strings.Split(*schedList, ",") {
		s, err := findScheduler(strings.TrimSpace(n))
		if err != nil {
			fail("-schedulers: %v", err)
		}
		scheds = append(scheds, s)
	}
	works := strings.Split(*workList, ",")
	subset := map[string]map[string]bool{}
	if *only != "" {
		for _, part := range strings.Split(*only, ";") {
			w, list, ok := strings.Cut(part, "=")
			if !ok {
				fail("-only: %q is not workload=scheduler,scheduler", part)
			}
			subset[strings.TrimSpace(w)] = map[string]bool{}
			for _, n := range strings.Split(list, ",") {
				if _, err := findScheduler(strings.TrimSpace(n)); err != nil {
					fail("-only: %v", err)
				}
				subset[strings.TrimSpace(w)][strings.TrimSpace(n)] = true
			}
		}
	}
	runs := func(w string) []Scheduler {
		if subset[w] == nil {
			return scheds
		}
		var out []Scheduler
		for _, s := range scheds {
			if subset[w][s.Name] {
				out = append(out, s)
			}
		}
		return out
	}
	if *nodes < 1 || *minutes <= *warmup || *speed <= 0 || *meanRun <= 0 {
		fail("need -nodes >= 1, -minutes > -warmup, -speed > 0, -mean-run > 0")
	}
	if *parallel < 1 {
		fail("-parallel: %d is not a number of runs at once (1 or more)", *parallel)
	}
	rc := RunConfig{
		Cluster:  Cluster{Nodes: *nodes, CPU: 16000, Memory: 64 << 30},
		Duration: time.Duration(*minutes * float64(time.Minute)),
		Warmup:   time.Duration(*warmup * float64(time.Minute)),
		MeanRun:  time.Duration(*meanRun * float64(time.Minute)),
		Speed:    *speed, Model: DefaultModel, Progress: os.Stderr, OwnerObjects: *ownerObjects,
	}
	switch *usage {
	case UsageSynthetic:
	case UsageTrace:
		if !(*cpuScale > 0) {
			fail("-trace-cpu-scale: %v is not a positive factor", *cpuScale)
		}
		var err error
		if rc.Model, err = TraceModel(traces(), *traceDay, *cpuScale); err != nil {
			fail("-usage trace, -trace-day: %v", err)
		}
	default:
		fail("-usage: %q is neither %s nor %s", *usage, UsageTrace, UsageSynthetic)
	}
	for _, w := range works {
		if _, err := Generate(strings.TrimSpace(w), rc.Cluster, time.Minute, time.Minute, 1, rc.Model); err != nil {
			fail("-workloads: %v", err)
		}
	}
	var estimates []EstimateRow
	loads := map[string]LoadCheck{} // by workload and seed
	var loadNote strings.Builder
	loadNote.WriteString("Planned load (the cpu the pods request, each from its arrival for its given time, over the cluster's, in the measured minutes):")
	for _, seed := range seeds {
		for _, wname := range works {
			w, _ := Generate(strings.TrimSpace(wname), rc.Cluster, rc.Duration, rc.MeanRun, seed, rc.Model)
			estimates = append(estimates, EstimateRow{Usage: rc.Model.Name(), Workload: w.Name, Seed: seed,
				Estimates: Estimate(w, rc.Model, seed, rc.Duration, rc.Warmup)})
			l := CheckLoad(w, rc.Cluster, rc.Duration, rc.Warmup)
			loads[fmt.Sprintf("%s/%d", w.Name, seed)] = l
			fmt.Fprintf(&loadNote, " %s seed %d: %v;", w.Name, seed, l)
			fmt.Fprintf(os.Stderr, "eval: %s seed %d: %d pods, %v\n", w.Name, seed, len(w.Pods), l)
		}
	}
	loadNote.WriteString("\n\n")
	if *estimate {
		fmt.Print(estimatesTable(estimates))
		return
	}
	if *predictors {
		if err := runPredictors(rc, works, seeds, traces()); err != nil {
			fail("-predictors: %v", err)
		}
		return
	}
	var err error
	if rc.PrometheusBin, err = harness.PrometheusBinary(); err != nil {
		fail("%v", err)
	}
	if rc.AnnotatorBin, err = buildAnnotator(); err != nil {
		fail("%v", err)
	}
	for _, s := range scheds {
		if !s.Descheduler {
			continue
		}
		// The descheduler and its policy, once, before any run's clock starts.
		ctx := context.Background()
		if _, err := harness.BuildDescheduler(ctx, os.Stderr); err != nil {
			fail("%v", err)
		}
		helm, err := harness.Helm(ctx, os.Stderr)
		if err != nil {
			fail("%v", err)
		}
		d, err := harness.RenderChartDescheduler(ctx, helm, "descheduler.lowNodeUtilization.source=KubernetesMetrics")
		if err != nil {
			fail("the chart's descheduler: %v", err)
		}
		rc.Descheduler = &d
		break
	}
	if *out == "" {
		root, err := harness.RepoRoot()
		if err != nil {
			fail("%v", err)
		}
		*out = filepath.Join(root, ".cache", "eval", time.Now().UTC().Format("20060102-150405"))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail("%v", err)
	}
	command := "go run ./lab " + strings.Join(os.Args[1:], " ")

	// The runs, in table order (seed, workload, scheduler); -parallel of them at once, each on
	// its own control plane. The report is rewritten after each run with every run done so far,
	// in that order, so that an interrupted evaluation keeps what it measured.
	type job struct {
		w    Workload
		s    Scheduler
		seed uint64
	}
	var jobs []job
	for _, seed := range seeds {
		for _, wname := range works {
			w, _ := Generate(strings.TrimSpace(wname), rc.Cluster, rc.Duration, rc.MeanRun, seed, rc.Model)
			for _, s := range runs(w.Name) {
				jobs = append(jobs, job{w: w, s: s, seed: seed})
			}
		}
	}
	done := make([]*Result, len(jobs))
	var (
		mu      sync.Mutex
		results []Result
		started int
	)
	began := time.Now()
	next := make(chan int)
	var wg sync.WaitGroup
	for range *parallel {
		wg.Go(func() {
			for i := range next {
				j := jobs[i]
				mu.Lock()
				started++
				fmt.Fprintf(os.Stderr, "[%d/%d %s] %s, seed %d, %s: %d pods\n", started, len(jobs),
					time.Since(began).Round(time.Second), j.w.Name, j.seed, j.s.Name, len(j.w.Pods))
				mu.Unlock()
				sess := harness.NewSession(os.Stderr)
				r := Run(sess, rc, j.w, j.s, j.seed)
				sess.Close()
				l := loads[fmt.Sprintf("%s/%d", j.w.Name, j.seed)]
				r.Figures.LoadLow, r.Figures.LoadMean, r.Figures.LoadHigh = l.Low, l.Mean, l.High
				if l.InBand() {
					r.Figures.InBand = 1
				}
				mu.Lock()
				done[i] = &r
				results = results[:0]
				for _, d := range done {
					if d != nil {
						results = append(results, *d)
					}
				}
				if err := writeReport(*out, runHeader(command, rc, seeds)+loadNote.String()+estimatesTable(estimates), results); err != nil {
					fail("writing the report: %v", err)
				}
				mu.Unlock()
			}
		})
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	fmt.Fprintf(os.Stderr, "eval: %d runs in %s; table and plots in %s\n", len(results), time.Since(began).Round(time.Second), *out)
	md, _ := os.ReadFile(filepath.Join(*out, "results.md"))
	os.Stdout.Write(md)
}
