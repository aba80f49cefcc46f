package main

import (
	"flag"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/annotator"
	"github.com/kube-safe-scheduler/extender/cluster"
	"github.com/kube-safe-scheduler/extender/settings"
	"github.com/kube-safe-scheduler/extender/usage"
)

// docRow matches a row of docs/configuration.md's setting tables: | `VAR` | `--flag` | default | meaning |.
var docRow = regexp.MustCompile("(?m)^\\| `([A-Z][A-Z0-9_]*)` \\| `--([a-z0-9-]+)` \\|([^|]*)\\|")

// declaredSettings returns every setting the programs declare, by variable: the extender's own
// and every agent's (agents.All, as -tags all compiles them), and the node annotator's with its
// usage learner and cluster access (as cmd/node-annotator declares them).
func declaredSettings(t *testing.T) map[string][]settings.Declared {
	t.Helper()
	out := map[string][]settings.Declared{}
	add := func(s *settings.Set) {
		for _, d := range s.Declared() {
			if !slices.Contains(out[d.Env], d) {
				out[d.Env] = append(out[d.Env], d)
			}
		}
	}
	st, err := parseSettings(agents.All, nil, env(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	add(st.set)
	fs := flag.NewFlagSet("node-annotator", flag.ContinueOnError)
	s := settings.New(fs, env())
	var a annotator.Config
	a.Declare(s)
	var u usage.Settings
	u.Declare(s)
	var c cluster.Config
	c.Declare(s)
	add(s)
	return out
}

// sameDefault reports whether a documented default (one backquoted value) is the declared one,
// durations compared as durations (1h is 1h0m0s).
func sameDefault(doc, declared string) bool {
	if doc == declared {
		return true
	}
	a, errA := time.ParseDuration(doc)
	b, errB := time.ParseDuration(declared)
	return errA == nil && errB == nil && a == b
}

// TestConfigurationDocListsEverySetting holds docs/configuration.md's tables to the code: every
// variable the extender, its agents and the node annotator declare has a row, with its flag;
// every row names a declared variable and its flag; a default written as one value is the
// declared default.
func TestConfigurationDocListsEverySetting(t *testing.T) {
	data, err := os.ReadFile("docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	declared := declaredSettings(t)
	documented := map[string]bool{}
	for _, m := range docRow.FindAllStringSubmatch(string(data), -1) {
		env, flagName, def := m[1], m[2], strings.TrimSpace(m[3])
		documented[env] = true
		ds, ok := declared[env]
		if !ok {
			t.Errorf("docs/configuration.md documents %s, which no program declares", env)
			continue
		}
		if !slices.ContainsFunc(ds, func(d settings.Declared) bool { return d.Flag == flagName }) {
			t.Errorf("docs/configuration.md gives %s the flag --%s; the code: %v", env, flagName, ds)
		}
		if v, ok := strings.CutPrefix(def, "`"); ok && strings.Count(def, "`") == 2 && strings.HasSuffix(def, "`") {
			v = strings.TrimSuffix(v, "`")
			if !slices.ContainsFunc(ds, func(d settings.Declared) bool { return sameDefault(v, d.Default) }) {
				t.Errorf("docs/configuration.md gives %s the default %q; the code: %v", env, v, ds)
			}
		}
	}
	var missing []string
	for env := range declared {
		if !documented[env] {
			missing = append(missing, env)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("docs/configuration.md has no row for %s (| `VAR` | `--flag` | default | meaning |)", strings.Join(missing, ", "))
	}
}
