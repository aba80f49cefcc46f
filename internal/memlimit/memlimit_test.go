package memlimit

import (
	"errors"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

func files(m map[string]string) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		if v, ok := m[name]; ok {
			return []byte(v), nil
		}
		return nil, fs.ErrNotExist
	}
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDecide(t *testing.T) {
	v2, v1 := Files[0], Files[1]
	for _, c := range []struct {
		name  string
		env   map[string]string
		files map[string]string
		limit int64
		says  string
	}{
		{"cgroup v2 512Mi", nil, map[string]string{v2: "536870912\n"}, 483183820, "460 MiB, 90 % of the container's 512 MiB (/sys/fs/cgroup/memory.max)"},
		{"cgroup v1 1Gi", nil, map[string]string{v1: "1073741824\n"}, 966367641, "921 MiB, 90 % of the container's 1024 MiB (/sys/fs/cgroup/memory/memory.limit_in_bytes)"},
		{"v2 wins over v1", nil, map[string]string{v2: "1073741824", v1: "536870912"}, 966367641, "memory.max"},
		{"v2 without a limit", nil, map[string]string{v2: "max\n"}, 0, "no memory limit"},
		{"v1 without a limit", nil, map[string]string{v1: "9223372036854771712\n"}, 0, "no memory limit"},
		{"no cgroup file", nil, nil, 0, "no cgroup memory limit found"},
		{"garbage", nil, map[string]string{v2: "lots"}, 0, `holds "lots", not a number of bytes`},
		{"GOMEMLIMIT wins", map[string]string{"GOMEMLIMIT": "300MiB"}, map[string]string{v2: "536870912"}, 0, "GOMEMLIMIT=300MiB as set"},
		{"GOMEMLIMIT off wins", map[string]string{"GOMEMLIMIT": "off"}, map[string]string{v2: "536870912"}, 0, "GOMEMLIMIT=off"},
		{"empty GOMEMLIMIT is unset", map[string]string{"GOMEMLIMIT": ""}, map[string]string{v2: "536870912"}, 483183820, "512 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			limit, why := Decide(env(c.env), files(c.files))
			if limit != c.limit || !strings.Contains(why, c.says) {
				t.Errorf("Decide = %d, %q; want %d and a sentence with %q", limit, why, c.limit, c.says)
			}
		})
	}
}

func TestUnreadableFileIsSkipped(t *testing.T) {
	read := func(name string) ([]byte, error) {
		if name == Files[0] {
			return nil, errors.New("permission denied")
		}
		return []byte("1073741824"), nil
	}
	if limit, _ := Decide(env(nil), read); limit != 966367641 {
		t.Errorf("limit %d, want v1's 90 %%", limit)
	}
}

// TestApplySetsTheRuntimeLimit runs Apply with GOMEMLIMIT unset in a process whose cgroup this
// test cannot choose, so it checks only that Apply sets what Decide says.
func TestApplySetsTheRuntimeLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	want, _ := Decide(env(nil), os.ReadFile)
	Apply()
	got := debug.SetMemoryLimit(-1)
	if want > 0 && got != want {
		t.Errorf("runtime limit %d, want %d", got, want)
	}
	if want == 0 && got != before {
		t.Errorf("runtime limit changed to %d without a cgroup limit", got)
	}
}
