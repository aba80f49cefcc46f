package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseDockerfileDir: the directory of the go build is the WORKDIR in effect relative to
// where the build context was copied, whether the paths are absolute or relative.
func TestParseDockerfileDir(t *testing.T) {
	for _, tc := range []struct {
		name, file, dir, err string
	}{
		{name: "root", dir: ".", file: "FROM golang AS build\nWORKDIR /src\nCOPY go.mod go.sum ./\nCOPY . .\nRUN go build -o /out/x .\n"},
		{name: "module below", dir: "scheduler",
			file: "FROM golang AS build\nWORKDIR /src\nCOPY go.mod ./\nWORKDIR /src/scheduler\nRUN go mod download\nCOPY . /src\nRUN CGO_ENABLED=0 go build -o /out/x .\n"},
		{name: "relative workdir", dir: "a/b", file: "FROM golang\nWORKDIR /src\nCOPY . .\nWORKDIR a\nWORKDIR b\nRUN go build -o /out/x .\n"},
		{name: "before the context", err: "before the build context is copied", file: "FROM golang\nWORKDIR /src\nRUN go build -o /out/x .\nCOPY . .\n"},
		{name: "outside the context", err: "outside the build context", file: "FROM golang\nWORKDIR /src\nCOPY . .\nWORKDIR /other\nRUN go build -o /out/x .\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "Dockerfile")
			if err := os.WriteFile(f, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			b, err := ParseDockerfile(f)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Dir != tc.dir {
				t.Fatalf("Dir %q, want %q", b.Dir, tc.dir)
			}
		})
	}
}
