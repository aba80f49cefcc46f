package e2e

// Docs are executed: every command a doc tells its reader to run is run here, or checked as
// closely as this machine allows, or skipped with a reason written next to it, and a command
// none of these accounts for fails the test.
//
// Which lines are commands (write docs so; docs/architecture.md, "Docs are tested"):
//   - The docs are README.md, docs/*.md, agents/*/README.md, annotator/README.md,
//     usage/README.md, and the chart's NOTES.txt as `helm install` prints it.
//   - In a fenced block tagged sh, bash or shell every line is a command but blank lines and
//     # comments; in a block tagged console, the lines starting with "$ ". A line ending in \
//     continues on the next; a trailing " # comment" is dropped.
//   - In an untagged fenced block, a 4-space-indented block or NOTES.txt, a line is a command
//     when its first word is one a reader runs (commandWords: kubectl, helm, extender, make,
//     go, docker, curl, promtool, node-annotator, kube-safe-scheduler, bin/..., ./..., ...);
//     the other lines are output or text. Blocks tagged yaml, json, text, go or anything else
//     are never run.
//   - <!-- doc-test: skip (reason) --> on the line before a block (blank lines between
//     allowed) skips the block's commands; the reason is logged. Keep these few: most
//     commands that cannot run here are checked by a rule below instead.
//
// How each command is run (docRules, first match): helm, kubectl and openssl for real against
// the test control plane (etcd and kube-apiserver, harness.StartCluster) in a scratch
// directory holding the repository's files, as the cluster's admin; extender subcommands with
// the extender built with every agent; kubectl verbs that need a kubelet or controllers
// (port-forward, logs, rollout status) by checking the Deployment and container they name
// (port-forward also runs that Deployment as local processes, so that the extender explain
// after it reads real decisions); make targets with make -n; the measurement programs of
// docs/performance.md and docs/quality.md with the doc's flags and -h. The commands of one
// block run in order and what they created is deleted after it (helm uninstall, kubectl
// delete). Placeholders in angle brackets are filled in (<agent>: every agent's file).

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// docCommand is one command a doc tells its reader to run.
type docCommand struct {
	// File is the doc's path from the repository's root (or "NOTES.txt"), Line the command's
	// first line there and Block its block's.
	File        string
	Line, Block int
	// Text is the command as written, continuation lines joined, without a trailing comment.
	Text string
	// Skip is the reason of a doc-test: skip marker before the block.
	Skip string
}

func (c docCommand) String() string { return fmt.Sprintf("%s:%d: %s", c.File, c.Line, c.Text) }

// commandWords are the first words of the lines that are commands in a block not tagged as a
// shell's: the programs this project's docs tell a reader to run.
var commandWords = []string{"kubectl", "helm", "extender", "make", "go", "docker", "kind", "curl", "promtool",
	"node-annotator", "kube-safe-scheduler", "cd", "git", "openssl", "python3", "/usr/bin/python3", "cp", "mv", "sed"}

// isCommandLine reports whether a trimmed line starts with a command word or a path to a
// program (bin/..., ./...).
func isCommandLine(line string) bool {
	w, _, _ := strings.Cut(line, " ")
	for _, p := range []string{"bin/", "./", "../"} {
		if strings.HasPrefix(w, p) {
			return true
		}
	}
	return slices.Contains(commandWords, w)
}

var (
	fenceRE         = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([A-Za-z0-9_-]*)")
	markerRE        = regexp.MustCompile(`^<!--\s*doc-test:\s*skip\s*\((.+)\)\s*-->$`)
	trailingComment = regexp.MustCompile(`\s+#\s.*$`)
)

// blockCommands returns the commands of block, whose first line is line first+1 of file.
func blockCommands(file string, block []string, first int, shell, console bool, skip string) []docCommand {
	var out []docCommand
	for i := 0; i < len(block); i++ {
		line, start := strings.TrimSpace(block[i]), i
		if console {
			var ok bool
			if line, ok = strings.CutPrefix(line, "$ "); !ok {
				continue
			}
		}
		if line == "" || strings.HasPrefix(line, "#") || !shell && !console && !isCommandLine(line) {
			continue
		}
		for strings.HasSuffix(line, "\\") && i+1 < len(block) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(block[i])
		}
		line = strings.Join(strings.Fields(trailingComment.ReplaceAllString(line, "")), " ")
		out = append(out, docCommand{File: file, Line: first + start + 1, Block: first + 1, Text: line, Skip: skip})
	}
	return out
}

// extractCommands returns the commands of a Markdown doc (the rule at the top of this file).
func extractCommands(file, text string) []docCommand {
	lines := strings.Split(text, "\n")
	var out []docCommand
	marker := ""
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := markerRE.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			marker = m[1]
			continue
		}
		if m := fenceRE.FindStringSubmatch(l); m != nil {
			j := i + 1
			for j < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[j]), m[1]) {
				j++
			}
			switch lang := m[2]; lang {
			case "", "sh", "bash", "shell", "console":
				out = append(out, blockCommands(file, lines[i+1:min(j, len(lines))], i+1, lang != "" && lang != "console", lang == "console", marker)...)
			}
			marker, i = "", j
			continue
		}
		if strings.HasPrefix(l, "    ") && i > 0 && strings.TrimSpace(lines[i-1]) == "" {
			j := i
			for j < len(lines) && (strings.HasPrefix(lines[j], "    ") || strings.TrimSpace(lines[j]) == "") {
				j++
			}
			out = append(out, blockCommands(file, lines[i:j], i, false, false, marker)...)
			marker, i = "", j-1
			continue
		}
		if strings.TrimSpace(l) != "" {
			marker = ""
		}
	}
	return out
}

// docFiles are the docs whose commands are run, from the repository's root.
func docFiles(t *testing.T, root string) []string {
	var files []string
	for _, pattern := range []string{"README.md", "docs/*.md", "agents/*/README.md", "annotator/README.md", "usage/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, _ := filepath.Rel(root, f)
			files = append(files, rel)
		}
	}
	return files
}

// The extraction rule, on a doc with each kind of block.
func TestExtractDocCommands(t *testing.T) {
	doc := strings.Join([]string{
		"Text.", "",
		"```sh", "make run    # the demo", "go test \\", "  ./...", "```", "",
		"```", "extender explain default/web-1", "Pod default/web-1: last scheduling cycle", "```", "",
		"```yaml", "kubectl: not a command", "```", "",
		"```console", "$ helm version", "version.BuildInfo{...}", "```", "",
		"<!-- doc-test: skip (needs a Docker engine) -->", "",
		"    docker build .", "    output line", "",
		"A paragraph.", "    kubectl get nodes   # continues the paragraph, not a block", "",
		"    kubectl get pods",
	}, "\n")
	var got []string
	for _, c := range extractCommands("d.md", doc) {
		got = append(got, fmt.Sprintf("%d %s [%s]", c.Line, c.Text, c.Skip))
	}
	want := []string{"4 make run []", "5 go test ./... []", "10 extender explain default/web-1 []", "19 helm version []",
		"25 docker build . [needs a Docker engine]", "31 kubectl get pods []"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A command no rule, marker or exception accounts for fails the test; a marker or an
// exception skips it with its reason.
func TestDocCommandAccounting(t *testing.T) {
	e := &docEnv{t: t}
	for _, tc := range []struct {
		c    docCommand
		kind string
	}{
		{docCommand{Text: "curl -s http://127.0.0.1:5401/healthz"}, "unaccounted"},
		{docCommand{Text: "curl -s http://127.0.0.1:5401/healthz", Skip: "needs a running extender"}, "skip"},
		{docCommand{Text: "bin/kube-safe-scheduler --version"}, "skip"},
	} {
		r := e.run(tc.c)
		if r.kind != tc.kind || (tc.kind == "unaccounted") != (r.err != nil) {
			t.Errorf("%q: %s (%v), want %s", tc.c.Text, r.kind, r.err, tc.kind)
		}
	}
}

// docEnv is where the docs' commands run.
type docEnv struct {
	t       *testing.T
	root    string
	scratch string // the working directory: links to the repository's files, and what commands write
	c       *harness.Cluster
	env     []string
	// forwards maps a port-forward's local port to the port standing in for the pod's.
	forwards map[int]int
	// undo are the commands that delete what the current block created, newest last.
	undo [][]string
	// built are the measurement programs, by package path.
	built map[string]string
}

// docRule says how the commands it matches are run, or why they are checked rather than run.
type docRule struct {
	kind   string // run, check, skip
	match  *regexp.Regexp
	reason string
	run    func(e *docEnv, c docCommand, m []string) error
}

// docRules: the first that matches a command runs it.
var docRules = []docRule{
	{"check", regexp.MustCompile(`^make( .*)?$`),
		"make's targets run the whole test suite, the demo, Docker or hours (eval, chaos, bench): make -n checks that each target exists and its recipe expands",
		(*docEnv).makeDryRun},
	{"check", regexp.MustCompile(`^(cd e2e && )?(\w+=\S+ && )?(nice -n \d+ )?go run (\./(?:bench/e2e|bench/memory|lab))( .*)?$`),
		"a measurement of minutes to hours (the records of docs/performance.md and docs/quality.md): the program is built and run with the doc's flags and -h, which fails on a flag it does not have",
		(*docEnv).measurementFlags},
	{"check", regexp.MustCompile(`^extender (\S+) .*\[`),
		"a synopsis: each flag it names must be one the subcommand lists in its -h",
		(*docEnv).synopsis},
	{"run", regexp.MustCompile(`^extender explain .*--url`), "", (*docEnv).explainURL},
	{"check", regexp.MustCompile(`^extender explain .*--scheduler`),
		"plugin mode needs kube-safe-scheduler with DECISIONS_KEPT and a user allowed /configz (TestDashboardPanelsHaveDataAndExplain runs this form against one): run with a token file against the forwarded port, closed here, it must fail to connect (exit 1), not on its arguments (exit 2)",
		(*docEnv).explainScheduler},
	{"run", regexp.MustCompile(`^extender `), "", (*docEnv).shell},
	{"check", regexp.MustCompile(`^kubectl -n (\S+) port-forward (?:deploy|deployment)/(\S+) ([\d ]+)$`),
		"port-forward needs a kubelet: the Deployment must be one the chart (in that namespace) or the shipped yamlfiles create, with those container ports; its containers then run as local processes (harness.RunDeployment) and the ports are forwarded to them",
		(*docEnv).portForward},
	{"check", regexp.MustCompile(`^kubectl -n (\S+) (?:logs|rollout status) (?:deploy|deployment)/(\S+)(?: -c (\S+))?`),
		"logs need a kubelet and rollout status a controller-manager: the Deployment (and the container named) must exist in the cluster",
		(*docEnv).deploymentExists},
	{"check", regexp.MustCompile(`^kubectl (?:-n \S+ )?delete pod `),
		"a bound pod is removed by its node's kubelet, which the test cluster has none of: the deletion is asked for and not waited for (--wait=false)",
		func(e *docEnv, c docCommand, _ []string) error {
			return e.shell(docCommand{Text: c.Text + " --wait=false"}, nil)
		}},
	{"run", regexp.MustCompile(`^kubectl `), "", (*docEnv).kubectl},
	{"run", regexp.MustCompile(`^helm `), "", (*docEnv).helm},
	{"run", regexp.MustCompile(`^openssl `), "", (*docEnv).shell},
}

// docExceptions are the commands neither run nor checked by a rule, by their exact text, with
// the reason. Keep them few; prefer a rule that checks something.
var docExceptions = map[string]string{
	"docker build -f dockerfiles/Dockerfile.scheduler --build-arg VERSION=$(git describe --tags --always) -t kube-safe-scheduler:latest .": "needs a Docker engine: TestDockerfiles runs each Dockerfile's go build line and the binary's --version",
	"bin/kube-safe-scheduler --version": "the binary make build-scheduler builds (5-10 minutes): TestDockerfiles builds it as Dockerfile.scheduler does and checks its --version",
	"cp -r agents/template agents/foo":  "the adding-an-agent tutorial writes a new agent into the tree; make test builds and tests the template it copies",
	"mv agents/foo/template.go agents/foo/foo.go; mv agents/foo/template_test.go agents/foo/foo_test.go":                  "the adding-an-agent tutorial (above)",
	"sed -i 's/template/foo/g; s/Template/Foo/g; s/TEMPLATE/FOO/g' agents/foo/*.go agents/foo/README.md":                  "the adding-an-agent tutorial (above)",
	"go build -tags foo -o /tmp/extender-foo . && /tmp/extender-foo --help":                                               "the adding-an-agent tutorial (above); TestHelp (make test) checks the extender's --help",
	"go vet -tags all . && go test -tags all . && go test ./agents/ ./charts/ ./internal/deploygen/schedconfig/":          "part of make test (lint and unit), which runs it",
	"cd e2e && go test -count=1 -run 'TestDockerfiles|TestYAMLFilesRenderedFromChart|TestExtenderFilesShape|TestChart' .": "part of make test (e2e), which runs it",
	"go test -count=1 -run TestLabSmoke ./lab/":                                                                           "part of make test (e2e ./...), which runs it",
	"cd scheduler && go test -c -o floor.test ./adapter":                                                                  "compiles the plugin scheduler's benchmarks (minutes) for a measurement; make test's unit target builds and runs ./adapter's tests",
	"/usr/bin/python3 agents/safe/beta/testdata/gen_risk_table.py > agents/safe/beta/testdata/risk_reference.csv":         "regenerates a committed reference table with SciPy (not installed here); TestRiskAgainstReference (make test) holds the agent to the committed file",
}

func (e *docEnv) logf(format string, args ...any) { e.t.Logf(format, args...) }

// sh runs text with bash in dir (default: the scratch directory) and returns its output.
func (e *docEnv) sh(dir, text string) (string, error) {
	if dir == "" {
		dir = e.scratch
	}
	ctx, cancel := context.WithTimeout(e.t.Context(), 5*time.Minute) // a measurement program's first build
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", text)
	cmd.Dir, cmd.Env = dir, e.env
	cmd.WaitDelay = 10 * time.Second // a child left holding the output does not hang the test
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (e *docEnv) shell(c docCommand, _ []string) error {
	out, err := e.sh("", c.Text)
	if err != nil {
		return fmt.Errorf("%v\n%s", err, out)
	}
	return nil
}

func (e *docEnv) makeDryRun(c docCommand, _ []string) error {
	var targets []string
	for _, w := range strings.Fields(c.Text)[1:] {
		if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") {
			targets = append(targets, w)
		}
	}
	out, err := e.sh(e.root, "make -n "+strings.Join(targets, " "))
	if err != nil {
		return fmt.Errorf("make -n %s: %v\n%s", strings.Join(targets, " "), err, out)
	}
	return nil
}

var placeholderRE = regexp.MustCompile(`<[^<>]*>`)

func (e *docEnv) measurementFlags(c docCommand, m []string) error {
	pkg := m[4] // ./bench/e2e, ./lab, ...
	bin, ok := e.built[pkg]
	if !ok {
		bin = filepath.Join(e.scratch, ".bin", filepath.Base(pkg))
		if out, err := e.sh(filepath.Join(e.root, "e2e"), "go build -o "+bin+" "+pkg); err != nil {
			return fmt.Errorf("building %s: %v\n%s", pkg, err, out)
		}
		e.built[pkg] = bin
	}
	text := strings.TrimPrefix(c.Text, "cd e2e && ")
	text = strings.Replace(text, "go run "+pkg, bin, 1)
	text = placeholderRE.ReplaceAllString(text, "x") + " -h"
	out, err := e.sh(filepath.Join(e.root, "e2e"), text)
	if err != nil {
		return fmt.Errorf("%s: %v\n%s", text, err, lastLines(out, 5))
	}
	return nil
}

var flagRE = regexp.MustCompile(`(?:^|[\s\[])--?([a-z][a-z0-9-]*)`)

func (e *docEnv) synopsis(c docCommand, m []string) error {
	help, _ := e.sh("", "extender "+m[1]+" -h")
	var missing []string
	for _, f := range flagRE.FindAllStringSubmatch(c.Text, -1) {
		if !strings.Contains(help, "  -"+f[1]+" ") && !strings.Contains(help, "  -"+f[1]+"\n") {
			missing = append(missing, "--"+f[1])
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("extender %s -h lists no %s:\n%s", m[1], strings.Join(missing, ", "), help)
	}
	return nil
}

var localPortRE = regexp.MustCompile(`127\.0\.0\.1:(\d+)`)

// forwarded rewrites the local ports of text that a port-forward of the block maps.
func (e *docEnv) forwarded(text string) (string, error) {
	var err error
	out := localPortRE.ReplaceAllStringFunc(text, func(s string) string {
		p, _ := strconv.Atoi(strings.TrimPrefix(s, "127.0.0.1:"))
		to, ok := e.forwards[p]
		if !ok {
			err = fmt.Errorf("no port-forward before it gives port %d", p)
		}
		return "127.0.0.1:" + strconv.Itoa(to)
	})
	return out, err
}

// explainURL creates the pod the command explains, waits until the Deployment a port-forward
// of the block runs has placed it, and runs the command against that Deployment's extenders.
func (e *docEnv) explainURL(c docCommand, _ []string) error {
	text, err := e.forwarded(c.Text)
	if err != nil {
		return err
	}
	pod := strings.Fields(c.Text)[2]
	ns, name, _ := strings.Cut(pod, "/")
	e.c.CreatePod(e.t, harness.PodSpec{Namespace: ns, Name: name, SchedulerName: "my-scheduler", CPU: "100m", Memory: "64Mi"})
	e.undo = append(e.undo, []string{"kubectl", "-n", ns, "delete", "pod", name, "--wait=false"})
	e.c.WaitForBinding(e.t, ns, name)
	out, err := e.sh("", text)
	if err != nil || !strings.Contains(out, "Pod "+pod+": last scheduling cycle") {
		return fmt.Errorf("%v\n%s", err, out)
	}
	e.logf("%s:\n%s", c, out)
	return nil
}

func (e *docEnv) explainScheduler(c docCommand, _ []string) error {
	text, err := e.forwarded(c.Text)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(e.scratch, "token"), []byte("not-a-token\n"), 0o600); err != nil {
		return err
	}
	out, err := e.sh("", text)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(out, "connection refused") {
		return fmt.Errorf("%v (want exit 1, connection refused)\n%s", err, out)
	}
	return nil
}

// deployments are the Deployments a reader can have: the chart's in chartNamespace (every
// agent on, in each mode) and each shipped yamlfile's, as namespace/name -> the ports of each
// (a sidecar's HTTP_PORT, every container port).
func (e *docEnv) deployments() map[string][][]int {
	out := map[string][][]int{}
	add := func(data []byte) {
		objs, err := harness.ReadObjects(data)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetKind() != "Deployment" {
				continue
			}
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
				e.t.Fatal(err)
			}
			// A sidecar serves on loopback (HTTP_PORT), declaring no container port.
			ports := []int{}
			for _, c := range d.Spec.Template.Spec.Containers {
				if p, err := harness.SidecarPort(c); err == nil {
					ports = append(ports, p)
				}
				for _, p := range c.Ports {
					ports = append(ports, int(p.ContainerPort))
				}
			}
			slices.Sort(ports)
			key := d.Namespace + "/" + d.Name
			out[key] = append(out[key], slices.Compact(ports))
		}
	}
	var all []string
	for _, a := range chartAgents(e.t) {
		all = append(all, "agents."+a+".enabled=true")
	}
	for _, mode := range []string{"extender", "plugin"} {
		data, err := renderIn(e.t, chartNamespace, append(all, "mode="+mode, "nodeAnnotator.learner.enabled=true")...)
		if err != nil {
			e.t.Fatal(err)
		}
		add(data)
	}
	files, _ := filepath.Glob(filepath.Join(e.root, "yamlfiles", "*.yaml"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			e.t.Fatal(err)
		}
		add(data)
	}
	return out
}

// portForward checks the Deployment, runs the chart's in that namespace with the agents
// serving the forwarded ports (the scheduler's secure port, 10259, is forwarded to a closed
// port: the plugin scheduler is not run here) and records the forwards.
func (e *docEnv) portForward(c docCommand, m []string) error {
	ns, name := m[1], m[2]
	variants, ok := e.deployments()[ns+"/"+name]
	if !ok {
		var have []string
		for k := range e.deployments() {
			have = append(have, k)
		}
		sort.Strings(have)
		return fmt.Errorf("no Deployment %s/%s in the chart (namespace %s) or yamlfiles/; there are %s", ns, name, chartNamespace, strings.Join(have, ", "))
	}
	var want []int
	for _, p := range strings.Fields(m[3]) {
		n, _ := strconv.Atoi(p)
		want = append(want, n)
	}
	// One Deployment (one install, one file) must serve every port forwarded.
	if !slices.ContainsFunc(variants, func(ports []int) bool {
		return !slices.ContainsFunc(want, func(p int) bool { return p != 10259 && !slices.Contains(ports, p) })
	}) {
		return fmt.Errorf("no Deployment %s/%s of the chart or of a yamlfile serves all of the ports %v (they serve %v)", ns, name, want, variants)
	}
	if slices.Contains(want, 10259) {
		free, err := harness.FreePorts(1)
		if err != nil {
			return err
		}
		e.forwards[10259] = free[0]
		return nil
	}
	// The agents on those ports: the chart's table, agent -> port, from a render with all on.
	all, err := renderIn(e.t, ns, func() []string {
		var s []string
		for _, a := range chartAgents(e.t) {
			s = append(s, "agents."+a+".enabled=true")
		}
		return s
	}()...)
	if err != nil {
		return err
	}
	d, err := harness.LoadDeployment("the chart, every agent", filterDeployment(all, name))
	if err != nil {
		return err
	}
	var sets []string
	for _, sc := range d.Sidecars {
		p, _ := harness.SidecarPort(sc)
		sets = append(sets, fmt.Sprintf("agents.%s.enabled=%t", sc.Name, slices.Contains(want, p)))
	}
	sets = append(sets, "nodeAnnotator.enabled=false")
	install := "helm upgrade --install kss charts/kube-safe-scheduler -n " + ns + " --create-namespace --set " + strings.Join(sets, " --set ")
	if err := e.helm(docCommand{Text: install}, nil); err != nil {
		return fmt.Errorf("installing the chart to forward to: %s: %v", install, err)
	}
	data, err := renderIn(e.t, ns, sets...)
	if err != nil {
		return err
	}
	run, err := harness.LoadDeployment("helm template "+strings.Join(sets, " "), data)
	if err != nil {
		return err
	}
	sa := e.c.KubeconfigFor(e.t, "system:serviceaccount:"+ns+":"+run.Deployment.Spec.Template.Spec.ServiceAccountName, "system:serviceaccounts", "system:serviceaccounts:"+ns, "system:authenticated")
	r := e.c.RunDeployment(e.t, run, harness.RunOptions{Kubeconfig: sa})
	for _, p := range want {
		e.forwards[p] = r.Ports[p]
	}
	e.c.CreateNodes(e.t, harness.NodeSpec{Name: "idle", Annotations: idleStats}, harness.NodeSpec{Name: "busy", Annotations: busyStats})
	e.undo = append(e.undo, []string{"kubectl", "delete", "node", "idle", "busy"})
	return nil
}

// filterDeployment keeps the Deployment name (and the ConfigMaps it mounts) of a render.
func filterDeployment(data []byte, name string) []byte {
	var keep []string
	for _, doc := range strings.Split(string(data), "\n---") {
		if strings.Contains(doc, "kind: Deployment") && !strings.Contains(doc, "\n  name: "+name+"\n") {
			continue
		}
		keep = append(keep, doc)
	}
	return []byte(strings.Join(keep, "\n---"))
}

func (e *docEnv) deploymentExists(c docCommand, m []string) error {
	out, err := e.sh("", "kubectl -n "+m[1]+" get deployment "+m[2]+" -o jsonpath='{.spec.template.spec.containers[*].name}'")
	if err != nil {
		return fmt.Errorf("Deployment %s/%s: %v\n%s", m[1], m[2], err, out)
	}
	if m[3] != "" && !slices.Contains(strings.Fields(out), m[3]) {
		return fmt.Errorf("Deployment %s/%s has no container %s (it has %s)", m[1], m[2], m[3], out)
	}
	return nil
}

var (
	kubectlFilesRE  = regexp.MustCompile(`^kubectl (?:-n \S+ )?(?:create|apply) ((?:-f \S+ ?)+)$`)
	kubectlSecretRE = regexp.MustCompile(`^kubectl -n (\S+) create secret \S+ (\S+)`)
	kubectlRunRE    = regexp.MustCompile(`^kubectl run (\S+)`)
)

// kubectl runs the command for real (a <agent> placeholder once per agent) and deletes what it
// created after the block.
func (e *docEnv) kubectl(c docCommand, _ []string) error {
	texts := []string{c.Text}
	if strings.Contains(c.Text, "<agent>") {
		texts = nil
		for _, a := range chartAgents(e.t) {
			texts = append(texts, strings.ReplaceAll(c.Text, "<agent>", a))
		}
	}
	for _, text := range texts {
		out, err := e.sh("", text)
		if err != nil {
			return fmt.Errorf("%s: %v\n%s", text, err, out)
		}
		switch {
		case kubectlFilesRE.MatchString(text):
			undo := []string{"kubectl", "delete", "--ignore-not-found", "--wait=false"}
			undo = append(undo, strings.Fields(kubectlFilesRE.FindStringSubmatch(text)[1])...)
			if len(texts) > 1 {
				// The next expansion creates the same service account: delete now.
				if out, err := e.sh("", strings.Join(undo, " ")); err != nil {
					return fmt.Errorf("%v\n%s", err, out)
				}
				continue
			}
			e.undo = append(e.undo, undo)
		case kubectlSecretRE.MatchString(text):
			m := kubectlSecretRE.FindStringSubmatch(text)
			e.undo = append(e.undo, []string{"kubectl", "-n", m[1], "delete", "secret", m[2]})
		case kubectlRunRE.MatchString(text):
			e.undo = append(e.undo, []string{"kubectl", "delete", "pod", kubectlRunRE.FindStringSubmatch(text)[1], "--ignore-not-found", "--wait=false"})
		}
	}
	return nil
}

var helmInstallRE = regexp.MustCompile(`^helm (?:install|upgrade --install) (\S+) .*(?:-n|--namespace) (\S+)`)

// helm runs the command for real; an install of a release the block already installed (the
// docs show alternatives) replaces it, and the block's releases are uninstalled after it.
func (e *docEnv) helm(c docCommand, _ []string) error {
	if m := helmInstallRE.FindStringSubmatch(c.Text); m != nil {
		if out, err := e.sh("", "helm uninstall "+m[1]+" -n "+m[2]+" --ignore-not-found"); err != nil {
			return fmt.Errorf("%v\n%s", err, out)
		}
		e.undo = append(e.undo, []string{"helm", "uninstall", m[1], "-n", m[2], "--ignore-not-found"})
	}
	out, err := e.sh("", c.Text)
	if err != nil {
		return fmt.Errorf("%v\n%s", err, lastLines(out, 10))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// docResult is what became of one command.
type docResult struct {
	cmd    docCommand
	kind   string // run, check, skip, unaccounted
	reason string
	err    error
}

// newDocEnv starts the control plane and prepares the scratch directory, the tools on PATH
// (extender with every agent, kubectl, helm) and Helm's and kubectl's configuration.
func newDocEnv(t *testing.T) *docEnv {
	root := repoRoot(t)
	scratch := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if n := en.Name(); n != ".git" && n != ".cache" && n != "bin" {
			if err := os.Symlink(filepath.Join(root, n), filepath.Join(scratch, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// convert-policy's example file: a Policy of the kind it converts.
	policy, err := os.ReadFile(filepath.Join(root, "internal", "deploygen", "schedconfig", "testdata", "generals-scheduler-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scratch, "scheduler-policy.json"), policy, 0o644); err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(scratch, ".bin")
	kubectl, err := harness.Kubectl(t.Context(), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, bin := range map[string]string{"extender": harness.BuildExtender(t, "all"), "kubectl": kubectl, "helm": helm(t)} {
		if err := os.Symlink(bin, filepath.Join(tools, name)); err != nil {
			t.Fatal(err)
		}
	}
	c := harness.StartCluster(t)
	// Helm's and kubectl's state in the scratch directory; HOME stays (Go's caches are under it).
	home := filepath.Join(scratch, ".home")
	env := append(os.Environ(), "PATH="+tools+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+c.Kubeconfig,
		"KUBECACHEDIR="+home+"/kube-cache", "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	return &docEnv{t: t, root: root, scratch: scratch, c: c, env: env, forwards: map[int]int{}, built: map[string]string{}}
}

// run accounts for c: skipped by its marker, an exception, or run by the first rule matching.
func (e *docEnv) run(c docCommand) docResult {
	if c.Skip != "" {
		return docResult{c, "skip", c.Skip, nil}
	}
	if why, ok := docExceptions[c.Text]; ok {
		return docResult{c, "skip", why, nil}
	}
	for _, r := range docRules {
		if m := r.match.FindStringSubmatch(c.Text); m != nil {
			return docResult{c, r.kind, r.reason, r.run(e, c, m)}
		}
	}
	return docResult{c, "unaccounted", "", fmt.Errorf("no rule runs or checks it: make it run here, or mark its block <!-- doc-test: skip (reason) --> (see e2e/docs_commands_test.go)")}
}

// endBlock deletes what the block created and forgets its port-forwards.
func (e *docEnv) endBlock() {
	for i := len(e.undo) - 1; i >= 0; i-- {
		if out, err := e.sh("", strings.Join(e.undo[i], " ")); err != nil {
			e.t.Errorf("cleaning up after a block: %s: %v\n%s", strings.Join(e.undo[i], " "), err, out)
		}
	}
	e.undo, e.forwards = nil, map[int]int{}
}

// runAll runs cmds block by block, each block a subtest (so that what it started stops after
// it), and reports each failure, naming the doc's line.
func (e *docEnv) runAll(cmds []docCommand) []docResult {
	var results []docResult
	parent := e.t
	defer func() { e.t = parent }()
	for len(cmds) > 0 {
		n := 1
		for n < len(cmds) && cmds[n].File == cmds[0].File && cmds[n].Block == cmds[0].Block {
			n++
		}
		block := cmds[:n]
		cmds = cmds[n:]
		parent.Run(fmt.Sprintf("%s:%d", block[0].File, block[0].Block), func(t *testing.T) {
			e.t = t
			defer e.endBlock()
			for _, c := range block {
				r := e.run(c)
				results = append(results, r)
				if r.err != nil {
					t.Errorf("%s\n  %s: %v", c, r.kind, r.err)
				}
			}
		})
	}
	return results
}

// TestDocsCommands runs every command of the docs (the rule at the top of this file), then
// installs the chart as the docs do and runs the commands of the NOTES it prints.
// DOC_TEST_ONLY=<regexp> runs the docs whose path matches it (and the NOTES).
func TestDocsCommands(t *testing.T) {
	t.Parallel()
	e := newDocEnv(t)
	var cmds []docCommand
	only := regexp.MustCompile(os.Getenv("DOC_TEST_ONLY"))
	for _, f := range docFiles(t, e.root) {
		if !only.MatchString(f) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(e.root, f))
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, extractCommands(f, string(b))...)
	}
	if len(cmds) < 20 && os.Getenv("DOC_TEST_ONLY") == "" {
		t.Fatalf("only %d commands found in the docs: the extraction is broken", len(cmds))
	}
	results := e.runAll(cmds)
	results = append(results, e.runNotes()...)

	counts := map[string]int{}
	var skipped []string
	for _, r := range results {
		counts[r.kind]++
		if r.kind != "run" {
			skipped = append(skipped, fmt.Sprintf("  %s %s\n      %s", r.kind, r.cmd, r.reason))
		}
	}
	t.Logf("%d commands: %d run, %d checked, %d skipped, %d unaccounted; not run as written:\n%s", len(results),
		counts["run"], counts["check"], counts["skip"], counts["unaccounted"], strings.Join(skipped, "\n"))
}

// runNotes installs the chart as NOTES.txt tells a reader to (its own namespace) and runs the
// commands of the NOTES helm prints, with the installed scheduler running (as local
// processes, as its service account) so that the pod they create is placed.
func (e *docEnv) runNotes() []docResult {
	t := e.t
	if _, err := os.Stat(filepath.Join(chartDir(t), "templates", "NOTES.txt")); err != nil {
		t.Logf("the chart has no NOTES.txt: %v", err)
		return nil
	}
	install := docCommand{File: "NOTES.txt", Text: "helm install kss charts/kube-safe-scheduler -n " + chartNamespace + " --create-namespace"}
	if err := e.helm(install, nil); err != nil {
		t.Fatalf("%s: %v", install, err)
	}
	notes, err := e.sh("", "helm get notes kss -n "+chartNamespace)
	if err != nil {
		t.Fatalf("helm get notes: %v\n%s", err, notes)
	}
	var cmds []docCommand
	for i, l := range strings.Split(notes, "\n") {
		if l = strings.TrimSpace(l); isCommandLine(l) {
			cmds = append(cmds, docCommand{File: "NOTES.txt (helm get notes)", Line: i + 1, Block: 1, Text: strings.Join(strings.Fields(l), " ")})
		}
	}
	if len(cmds) == 0 {
		t.Errorf("the NOTES name no command:\n%s", notes)
	}
	scheduler, err := renderIn(t, chartNamespace, "nodeAnnotator.enabled=false")
	if err != nil {
		t.Fatal(err)
	}
	d, err := harness.LoadDeployment("helm install", scheduler)
	if err != nil {
		t.Fatal(err)
	}
	sa := e.c.KubeconfigFor(t, "system:serviceaccount:"+chartNamespace+":"+d.Deployment.Spec.Template.Spec.ServiceAccountName,
		"system:serviceaccounts", "system:serviceaccounts:"+chartNamespace, "system:authenticated")
	e.c.RunDeployment(t, d, harness.RunOptions{Kubeconfig: sa})
	e.c.CreateNodes(t, harness.NodeSpec{Name: "notes-idle", Annotations: idleStats})
	return e.runAll(cmds)
}
