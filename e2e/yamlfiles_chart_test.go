package e2e

// The shipped yamlfiles/*.yaml are rendered from the chart: one source. Each rendered file has a
// values file, charts/yamlfiles/<name>.values.yaml, whose leading comment block (up to the first
// blank line) is the file's header; renderedYAMLFiles says which of the chart's templates it
// keeps (the identity, the scheduler, each agent's roles go to separate files so that
// `kubectl create -f yamlfiles/service-account.yaml -f yamlfiles/extender.<agent>.yaml` works as
// before). TestYAMLFilesRenderedFromChart fails, naming the file and the first line that
// differs, when a file drifts from its render; UPDATE_YAMLFILES=1 (make yamlfiles) rewrites them.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// yamlfilesRelease is the release name the shipped files are rendered with (it names the node
// annotator's ClusterRole and labels every object app.kubernetes.io/instance).
const yamlfilesRelease = "kube-safe-scheduler"

// yamlfilesImageTag is the tag of this project's images in the shipped files.
const yamlfilesImageTag = "latest"

// The templates of the scheduler itself (extender mode), and with the agents' own roles.
var (
	schedulerTemplates = []string{"scheduler-config.yaml", "deployment.yaml"}
	withAgentRoles     = []string{"scheduler-config.yaml", "deployment.yaml", "rbac-agents.yaml"}
)

// otherYAMLFiles maps each rendered file of yamlfiles/ that runs no extender to the templates
// it keeps (nil: all). Every other values file, charts/yamlfiles/extender.<agents>.values.yaml,
// renders yamlfiles/extender.<agents>.yaml from the scheduler's templates and, when its agents
// have roles of their own, rbac-agents.yaml: no list of agents to keep.
var otherYAMLFiles = map[string][]string{
	"service-account.yaml":      {"rbac.yaml"},
	"scheduler.plugins.yaml":    nil,
	"node-annotator.yaml":       {"node-annotator.yaml"},
	"podgroup-crd.yaml":         {"crds.yaml"},
	"telemetry-policy-crd.yaml": {"crds.yaml"},
}

// renderedYAMLFiles returns the files of yamlfiles/ rendered from the chart: one per values file
// of charts/yamlfiles/, with the templates it keeps.
func renderedYAMLFiles(t *testing.T) map[string][]string {
	t.Helper()
	valueFiles, _ := filepath.Glob(filepath.Join(repoRoot(t), "charts", "yamlfiles", "*.values.yaml"))
	if len(valueFiles) == 0 {
		t.Fatal("no charts/yamlfiles/*.values.yaml")
	}
	out := map[string][]string{}
	for _, v := range valueFiles {
		name := strings.TrimSuffix(filepath.Base(v), ".values.yaml") + ".yaml"
		if tpls, ok := otherYAMLFiles[name]; ok {
			out[name] = tpls
		} else if strings.HasPrefix(name, "extender.") {
			out[name] = withAgentRoles
		} else {
			t.Errorf("charts/yamlfiles/%s: neither extender.<agents>.values.yaml nor in otherYAMLFiles (with the templates its file keeps)", filepath.Base(v))
		}
	}
	return out
}

// handWrittenYAMLFiles are the files of yamlfiles/ that are not chart output, and why.
var handWrittenYAMLFiles = map[string]string{
	"test-pod.yaml": "a pod for users to try the scheduler with; the chart installs no workload",
}

// renderYAMLFile renders yamlfiles/<name> from the chart and its values file.
func renderYAMLFile(t *testing.T, name string, templates []string) []byte {
	t.Helper()
	values := filepath.Join(repoRoot(t), "charts", "yamlfiles", strings.TrimSuffix(name, ".yaml")+".values.yaml")
	data, err := os.ReadFile(values)
	if err != nil {
		t.Fatalf("yamlfiles/%s: its values file: %v", name, err)
	}
	var header []string
	for line := range strings.Lines(string(data)) {
		if !strings.HasPrefix(line, "#") {
			break
		}
		header = append(header, strings.TrimRight(line, "\n"))
	}
	helm := func(templates []string) ([]byte, error) {
		// The shipped files keep the tag latest, which make images gives every build as well as
		// its VERSION: kubectl create -f runs what was built last, as before the chart.
		args := []string{"template", yamlfilesRelease, chartDir(t), "--namespace", "kube-system", "--kube-version", "v1.37.1",
			"--set", "images.tag=" + yamlfilesImageTag, "-f", values}
		for _, tpl := range templates {
			args = append(args, "--show-only", "templates/"+tpl)
		}
		return runHelm(t, args...)
	}
	out, err := helm(templates)
	if err != nil && slices.Equal(templates, withAgentRoles) && strings.Contains(err.Error(), "could not find template templates/rbac-agents.yaml") {
		out, err = helm(schedulerTemplates) // these agents have no roles of their own
	}
	if err != nil {
		t.Fatalf("yamlfiles/%s: %v", name, err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Generated from charts/kube-safe-scheduler with charts/yamlfiles/%s by `make yamlfiles`:\n", filepath.Base(values))
	b.WriteString("# edit the chart or the values file, not this file.\n#\n")
	for _, l := range header {
		b.WriteString(l + "\n")
	}
	b.Write(out)
	return b.Bytes()
}

// firstDifference returns the first line (1-based) where got and want differ, and both lines.
func firstDifference(got, want []byte) (int, string, string) {
	g, w := bufio.NewScanner(bytes.NewReader(got)), bufio.NewScanner(bytes.NewReader(want))
	for n := 1; ; n++ {
		gok, wok := g.Scan(), w.Scan()
		if !gok && !wok {
			return 0, "", ""
		}
		if gok != wok || g.Text() != w.Text() {
			gl, wl := "(end of file)", "(end of file)"
			if gok {
				gl = g.Text()
			}
			if wok {
				wl = w.Text()
			}
			return n, gl, wl
		}
	}
}

func TestYAMLFilesRenderedFromChart(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	shipped, err := filepath.Glob(filepath.Join(root, "yamlfiles", "*.yaml"))
	if err != nil || len(shipped) == 0 {
		t.Fatalf("no yamlfiles/*.yaml: %v", err)
	}
	rendered := renderedYAMLFiles(t)
	for _, f := range shipped {
		name := filepath.Base(f)
		_, isRendered := rendered[name]
		if !isRendered && handWrittenYAMLFiles[name] == "" {
			t.Errorf("yamlfiles/%s is neither rendered from the chart (by a values file charts/yamlfiles/%s) nor listed as hand-written",
				name, strings.TrimSuffix(name, ".yaml")+".values.yaml")
		}
	}
	update := os.Getenv("UPDATE_YAMLFILES") != ""
	for name, templates := range rendered {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := renderYAMLFile(t, name, templates)
			path := filepath.Join(root, "yamlfiles", name)
			if update {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if n, g, w := firstDifference(got, want); n > 0 {
				t.Errorf("yamlfiles/%s differs from its render at line %d:\n  file:   %s\n  render: %s\nedit the chart or charts/yamlfiles/, then run make yamlfiles", name, n, g, w)
			}
		})
	}
}
