# The extender's build, test and demo entry points. See README.md.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
# The agents are the top-level files that compile in with their own tag (//go:build <name> || all),
# generated from agents.All by make generate.
AGENTS    := $(patsubst %.go,%,$(shell grep -l '^//go:build [a-z]* || all$$' *.go))
BIN       := bin
FUZZTIME  ?= 20000x
FUZZERS   := FuzzServe FuzzNodeItemSpans FuzzNameList FuzzNamesCodec

.PHONY: generate chart yamlfiles all build $(addprefix build-,$(AGENTS)) build-annotator build-scheduler test prometheus unit fuzz load e2e lint images run bench bench-e2e bench-memory bench-perf eval chaos clean

# The Prometheus tests of the node annotator must run, not skip, under make test.
export REQUIRE_PROMETHEUS := 1

all: build

## build: the extender with every agent (bin/extender) and the node annotator
build: build-annotator
	CGO_ENABLED=0 $(GO) build -tags all -ldflags '$(LDFLAGS)' -o $(BIN)/extender .

## build-<agent>: the extender with one agent (bin/extender-<agent>)
$(addprefix build-,$(AGENTS)): build-%:
	CGO_ENABLED=0 $(GO) build -tags $* -ldflags '$(LDFLAGS)' -o $(BIN)/extender-$* .

build-annotator:
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/node-annotator ./cmd/node-annotator

## build-scheduler: kube-scheduler with every agent as a framework plugin (bin/kube-safe-scheduler,
## plugin mode: docs/plugin-mode.md); a module of its own, scheduler/. --version reports the
## Kubernetes release it is built from, with VERSION.
build-scheduler:
	cd scheduler && CGO_ENABLED=0 $(GO) build -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$$($(GO) list -m -f '{{.Version}}' k8s.io/kubernetes)+safe.$(VERSION)" -o ../$(BIN)/kube-safe-scheduler .

## test: every test: lint, unit tests (race detector on), a short fuzz run, end to end on a real control plane
test: lint prometheus unit fuzz load e2e

## prometheus: installs Debian's prometheus (for the annotator's tests) when missing
prometheus:
	sh hack/install-prometheus.sh

unit:
	$(GO) test -race -count=1 ./...
	$(GO) test -race -count=1 -tags all .
	cd scheduler && $(GO) test -count=1 ./...
	cd e2e && $(GO) test -count=1 ./bench/agents

## fuzz: a short run of each fuzzer of the HTTP layer (20,000 inputs each; a count, not a duration: Go 1.26's
## coordinator can fail a duration run with "context deadline exceeded" at its end, golang/go#75804);
## FUZZTIME=10m make fuzz for a long one
fuzz:
	for f in $(FUZZERS); do $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) ./server || exit 1; done

## load: one extender process, 8 clients, 10,000 mixed requests: no error, no memory growth
load:
	cd e2e && LOAD_TEST=1 $(GO) test -count=1 -run '^TestLoad$$' -v ./bench/agents

## e2e: builds etcd, kube-apiserver and kube-scheduler once (cached in .cache/), then runs them
e2e:
	cd e2e && $(GO) run ./harness/cmd/prepare
	cd e2e && $(GO) test -count=1 -timeout 60m ./...

lint:
	@out=$$(gofmt -l . e2e); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags all .
	cd e2e && $(GO) vet ./...
	cd scheduler && $(GO) vet ./...
	cd e2e && $(GO) vet -tags perf ./bench/perf

## images: one image per agent, one with all agents, one for the annotator, the plugin scheduler (needs a Docker engine)
images:
	for a in $(AGENTS) all; do docker build --build-arg VERSION=$(VERSION) -f dockerfiles/Dockerfile.$$a -t kube-sched-ext-$$a:$(VERSION) -t kube-sched-ext-$$a:latest . || exit 1; done
	docker build --build-arg VERSION=$(VERSION) -f dockerfiles/Dockerfile.node-annotator -t kube-node-annotator:$(VERSION) -t kube-node-annotator:latest .
	docker build --build-arg VERSION=$(VERSION) -f dockerfiles/Dockerfile.scheduler -t kube-safe-scheduler:$(VERSION) -t kube-safe-scheduler:latest .

## generate: rewrites every file that names the agents from agents.All (agents/agents.go) with
## the program hack/generate: the extender's build-tagged files (<agent>.go),
## dockerfiles/Dockerfile.<agent> and .all, the tables of README.md and docs/plugin-mode.md, and
## the chart's agent table, call order, values entries, values schema and alert; then yamlfiles/
## from the chart (make yamlfiles, needs Helm: built once). TestGeneratedFromRegistry (agents/) and
## TestChartMatchesCode (charts/) fail when a committed file differs from what it writes.
generate:
	$(GO) run ./hack/generate
	$(MAKE) yamlfiles

## chart: regenerates the chart's agent table, values entries and schema from the agents' code
chart:
	$(GO) run ./hack/generate -chart

## yamlfiles: renders yamlfiles/*.yaml from the chart with the values of charts/yamlfiles/ (Helm is
## built into .cache/helm once); the e2e test TestYAMLFilesRenderedFromChart fails when they drift
yamlfiles:
	cd e2e && UPDATE_YAMLFILES=1 $(GO) test -count=1 -run '^TestYAMLFilesRenderedFromChart$$' .

## run: the product on its embedded default: a local control plane, sample nodes and pods, every agent
run:
	cd e2e && $(GO) run ./demo

## Benchmarks live in e2e/bench/ (the e2e module): agents (every agent function through the HTTP
## handler, and TestLoad), e2e (bench-e2e), memory (bench-memory), perf (scheduler_perf).
## bench: the packages' own Go benchmarks, every agent function through the HTTP handler
## (e2e/bench/agents), then the load run
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
	cd e2e && $(GO) test -run '^$$' -bench . -benchmem ./bench/agents
	$(MAKE) load

## bench-perf: kube-scheduler's own benchmark (scheduler_perf, e2e/bench/perf) with the agents as
## out-of-tree plugins, every test case at BENCH_PERF_NODES nodes (20, 500, 2000 or 5000), against
## the harness's etcd; bench-e2e runs the same cases beside its modes, in one table
BENCH_PERF_NODES ?= 500
bench-perf:
	cd e2e && $(GO) run ./harness/cmd/prepare
	cd e2e && PATH="$(CURDIR)/.cache/bin:$$PATH" $(GO) test -tags perf -run '^$$' -timeout 60m \
		-bench 'PerfScheduling/^(SchedulingBasic|Annotated.*)$$/^$(BENCH_PERF_NODES)Nodes$$' -benchtime 1x ./bench/perf

## bench-e2e: pods/s and CPU per pod of kube-scheduler alone, with the extenders and in plugin mode,
## and scheduler_perf's cases (bench-perf), side by side
bench-e2e:
	cd e2e && $(GO) run ./bench/e2e

## bench-memory: RSS of the all extender watching 5000 nodes and 50,000 pods (BENCH_MEMORY_ARGS changes it)
BENCH_MEMORY_ARGS ?= -nodes 5000 -pods 50000
bench-memory:
	cd e2e && $(GO) run ./bench/memory $(BENCH_MEMORY_ARGS)

## eval: the placement quality lab (docs/quality.md): every scheduler on kwok nodes, usage from public
## cluster traces (fixtures in e2e/testdata/traces; EVAL_ARGS='-usage synthetic' for the lab's own
## model) through Prometheus and the node annotator; a table and plots in .cache/eval/<time>. EVAL_ARGS
## changes it (e.g. EVAL_ARGS='-seeds 1 -schedulers defaults,safe'). The default, the published tables'
## lab: 50 nodes, 45 simulated minutes (15 of warm-up) at 20x, five seeds, each workload's schedulers
## and the two references, oracle and workload-level, two runs at once (160 runs of about 2.5 minutes):
## about 3.5 hours on two idle cores. The lab before (200 nodes, 60 minutes at 10x) took about 16 hours.
EVAL_ARGS ?= -nodes 50 -minutes 45 -warmup 15 -speed 20 -seeds 1,2,3,4,5 -parallel 2
eval: prometheus
	cd e2e && $(GO) run ./harness/cmd/prepare
	cd e2e && $(GO) run ./lab $(EVAL_ARGS)

## chaos: each mode's shipped configuration (extender sidecars; two kube-safe-scheduler replicas)
## on CHAOS_NODES nodes with CHAOS_PODS pods of workloads, faults injected while they schedule
## (extender SIGKILL, extender slowed past httpTimeout, kube-apiserver restart, leader replica
## SIGKILL, statistics source cut past their maximum age, the reward and usage stores' writers
## SIGKILLed mid-write); fails on a lost, doubled or unsafe binding, a store version not whole or
## rows lost, or a recovery over 10 s (after an API server outage: from the re-lead), and prints
## one table (docs/operations.md, "Chaos run").
## make test runs its short form (24 nodes, 240 pods).
CHAOS_NODES ?= 200
CHAOS_PODS  ?= 2000
chaos: prometheus
	cd e2e && $(GO) run ./harness/cmd/prepare
	mkdir -p .cache/chaos
	cd e2e && CHAOS_NODES=$(CHAOS_NODES) CHAOS_PODS=$(CHAOS_PODS) CHAOS_TABLE=$(CURDIR)/.cache/chaos/table.md \
		$(GO) test -count=1 -timeout 30m -run '^TestChaos$$' . ; rc=$$?; cat $(CURDIR)/.cache/chaos/table.md; exit $$rc

clean:
	rm -rf $(BIN)
