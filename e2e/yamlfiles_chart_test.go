package e2e

// The shipped yamlfiles/*.yaml are rendered from the chart: one source. Each rendered file has a
// values file, charts/yamlfiles/<name>.values.yaml, whose leading comment block (up to the first
// blank line) is the file's header; the table below says which of the chart's templates it
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
	"strings"
	"testing"
)

// yamlfilesRelease is the release name the shipped files are rendered with (it names the node
// annotator's ClusterRole and labels every object app.kubernetes.io/instance).
const yamlfilesRelease = "kube-safe-scheduler"

// The templates of the scheduler itself (extender mode), and with the agents' own roles.
var (
	schedulerTemplates = []string{"scheduler-config.yaml", "deployment.yaml"}
	withAgentRoles     = []string{"scheduler-config.yaml", "deployment.yaml", "rbac-agents.yaml"}
)

// renderedYAMLFiles maps each rendered file of yamlfiles/ to the templates it keeps (nil: all).
var renderedYAMLFiles = map[string][]string{
	"service-account.yaml":                   {"rbac.yaml"},
	"extender.safe.yaml":                     schedulerTemplates,
	"extender.congestion.yaml":               schedulerTemplates,
	"extender.pigeon.yaml":                   schedulerTemplates,
	"extender.template.yaml":                 schedulerTemplates,
	"extender.safe.congestion.yaml":          schedulerTemplates,
	"extender.safe.pigeon.yaml":              schedulerTemplates,
	"extender.safe.mtls.yaml":                schedulerTemplates,
	"extender.safe.congestion.combined.yaml": schedulerTemplates,
	"extender.telemetry.yaml":                withAgentRoles,
	"extender.reward.yaml":                   withAgentRoles,
	"extender.gang.yaml":                     withAgentRoles,
	"scheduler.plugins.yaml":                 nil,
	"node-annotator.yaml":                    {"node-annotator.yaml"},
	"podgroup-crd.yaml":                      {"crds.yaml"},
	"telemetry-policy-crd.yaml":              {"crds.yaml"},
}

// handWrittenYAMLFiles are the files of yamlfiles/ that are not chart output, and why.
var handWrittenYAMLFiles = map[string]string{
	"test-pod.yaml": "a pod for users to try the scheduler with; the chart installs no workload",
}

// renderYAMLFile renders yamlfiles/<name> from the chart and its values file.
func renderYAMLFile(t *testing.T, name string) []byte {
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
	args := []string{"template", yamlfilesRelease, chartDir(t), "--namespace", "kube-system", "--kube-version", "v1.37.1", "-f", values}
	for _, tpl := range renderedYAMLFiles[name] {
		args = append(args, "--show-only", "templates/"+tpl)
	}
	out, err := runHelm(t, args...)
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
	for _, f := range shipped {
		name := filepath.Base(f)
		_, rendered := renderedYAMLFiles[name]
		if !rendered && handWrittenYAMLFiles[name] == "" {
			t.Errorf("yamlfiles/%s is neither rendered from the chart (renderedYAMLFiles, with charts/yamlfiles/%s) nor listed as hand-written",
				name, strings.TrimSuffix(name, ".yaml")+".values.yaml")
		}
	}
	valueFiles, _ := filepath.Glob(filepath.Join(root, "charts", "yamlfiles", "*.values.yaml"))
	for _, v := range valueFiles {
		name := strings.TrimSuffix(filepath.Base(v), ".values.yaml") + ".yaml"
		if _, ok := renderedYAMLFiles[name]; !ok {
			t.Errorf("charts/yamlfiles/%s renders no file: add yamlfiles/%s to renderedYAMLFiles", filepath.Base(v), name)
		}
	}
	update := os.Getenv("UPDATE_YAMLFILES") != ""
	for name := range renderedYAMLFiles {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := renderYAMLFile(t, name)
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
