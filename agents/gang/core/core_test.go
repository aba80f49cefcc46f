package core

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The group logic is framework-free, so that the extender agent (agents/gang) and the plugins
// (scheduler/gangplugin) are both glue over it: it reads the API's wire types and client-go's
// caches, and imports no scheduler (k8s.io/kubernetes, k8s.io/kube-scheduler) and none of this
// project's packages (the extender's framework, settings).
func TestFrameworkFree(t *testing.T) {
	allowed := []string{"k8s.io/api/", "k8s.io/apimachinery/", "k8s.io/client-go/"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			std := !strings.Contains(strings.SplitN(path, "/", 2)[0], ".")
			ok := std
			for _, p := range allowed {
				ok = ok || strings.HasPrefix(path, p)
			}
			if !ok {
				t.Errorf("%s imports %s: the core takes only the standard library, k8s.io/api, apimachinery and client-go", f, path)
			}
		}
	}
}

// StatusEqual compares ScheduleStartTime as instants (a status read back from the API server
// has it in UTC, the scheduler's own in its local zone), and tells a set one from a missing one.
func TestStatusEqual(t *testing.T) {
	at := func(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := Status{Phase: PhaseScheduling, Scheduled: 1, ScheduleStartTime: at(t0)}
	same := s
	same.ScheduleStartTime = at(t0.In(time.FixedZone("x", 3600)))
	if !StatusEqual(s, same) {
		t.Error("one instant in two zones differs")
	}
	for name, other := range map[string]Status{
		"no start":    {Phase: PhaseScheduling, Scheduled: 1},
		"later start": {Phase: PhaseScheduling, Scheduled: 1, ScheduleStartTime: at(t0.Add(time.Second))},
		"a count":     {Phase: PhaseScheduling, Scheduled: 2, ScheduleStartTime: at(t0)},
		"the phase":   {Phase: PhaseRunning, Scheduled: 1, ScheduleStartTime: at(t0)},
	} {
		if StatusEqual(s, other) {
			t.Errorf("%s: equal", name)
		}
	}
}
