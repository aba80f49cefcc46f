package nodestats

import (
	"os"
	"strings"
	"testing"
)

// TestSameAsRootFixtures: this package is the root module's internal/fixtures/stats.go under
// another package name; the two must not drift.
func TestSameAsRootFixtures(t *testing.T) {
	body := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		i := strings.Index(s, "\nimport (")
		if i < 0 {
			t.Fatalf("%s: no import block", path)
		}
		return s[i:]
	}
	if body("stats.go") != body("../../../internal/fixtures/stats.go") {
		t.Error("e2e/internal/nodestats/stats.go differs from internal/fixtures/stats.go after the package clause: copy the root's file again")
	}
}
