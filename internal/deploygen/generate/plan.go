// Package generate computes every file that `make generate` writes from the code: from the
// registry (agents.All) the extender's build-tagged files (<agent>.go at the root),
// dockerfiles/Dockerfile.<agent> and .all, the agent table of README.md and the plugin table of
// docs/plugin-mode.md (Registry); from the agents' Config types and schedconfig's table the
// chart's files/agents.json, values.schema.json, the agents entries of values.yaml and the
// plugin matcher of its alert (Chart).
//
// It only computes: the program hack/generate (make generate, make chart) writes the files
// with Plan.Apply, and the tests of agents/ and charts/ hold the committed files to the same
// Plan with Plan.Check, so that a stale file fails a test that names it and make generate.
package generate

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Program is how generated files name their generator.
const Program = "hack/generate"

// Plan is what a generator wants on disk, by path relative to the repository root.
type Plan struct {
	// Write are files whose whole content is generated.
	Write map[string][]byte
	// Create are first files written only when missing (an agent's first chart values file):
	// their author may edit them after.
	Create map[string][]byte
	// Remove are files generated before for an agent agents.All no longer has.
	Remove []string
}

func newPlan() Plan { return Plan{Write: map[string][]byte{}, Create: map[string][]byte{}} }

// merge adds q's files to p.
func (p *Plan) merge(q Plan) {
	maps.Copy(p.Write, q.Write)
	maps.Copy(p.Create, q.Create)
	p.Remove = append(p.Remove, q.Remove...)
}

// Apply writes p under root: every Write file, the Create files that are missing, and removes
// the Remove files. It returns the paths it changed, sorted.
func (p Plan) Apply(root string) ([]string, error) {
	var changed []string
	for _, rel := range slices.Sorted(maps.Keys(p.Write)) {
		path := filepath.Join(root, rel)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, p.Write[rel]) {
			continue
		}
		if err := os.WriteFile(path, p.Write[rel], 0o644); err != nil {
			return changed, err
		}
		changed = append(changed, rel)
	}
	for _, rel := range slices.Sorted(maps.Keys(p.Create)) {
		path := filepath.Join(root, rel)
		if _, err := os.Stat(path); err == nil {
			continue
		}
		if err := os.WriteFile(path, p.Create[rel], 0o644); err != nil {
			return changed, err
		}
		changed = append(changed, rel)
	}
	for _, rel := range p.Remove {
		if err := os.Remove(filepath.Join(root, rel)); err != nil {
			return changed, err
		}
		changed = append(changed, rel)
	}
	slices.Sort(changed)
	return changed, nil
}

// Check compares p with the files under root and returns one error per file that Apply would
// change, each naming the file and make generate.
func (p Plan) Check(root string) []error {
	var errs []error
	for _, rel := range slices.Sorted(maps.Keys(p.Write)) {
		got, err := os.ReadFile(filepath.Join(root, rel))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %v: run make generate", rel, err))
		case !bytes.Equal(got, p.Write[rel]):
			errs = append(errs, fmt.Errorf("%s differs from what the code says: run make generate", rel))
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(p.Create)) {
		if _, err := os.Stat(filepath.Join(root, rel)); errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("%s is missing: run make generate (it writes a first one, yours to edit)", rel))
		}
	}
	for _, rel := range p.Remove {
		errs = append(errs, fmt.Errorf("%s was generated for an agent agents.All no longer has: run make generate", rel))
	}
	return errs
}

// All is Registry and Chart together: what make generate writes before make yamlfiles.
func All(root string) (Plan, error) {
	p, err := Registry(root)
	if err != nil {
		return p, err
	}
	c, err := Chart(root)
	if err != nil {
		return p, err
	}
	p.merge(c)
	return p, nil
}
