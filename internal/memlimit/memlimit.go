// Package memlimit sets the Go runtime's soft memory limit from the container's memory limit,
// so that the garbage collector works harder as the process nears the limit instead of the
// kernel killing it there. Without a limit the heap may grow to twice its live size between two
// collections (GOGC=100): the extender's cluster cache at 5000 nodes and 50,000 pods lives at
// about 200 MiB and peaks above 400 MiB RSS, close to the shipped 512Mi limit.
package memlimit

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Share is the part of the container's limit given to the Go runtime: the rest is left to
// memory the runtime does not count against its limit (thread stacks of cgo calls, the
// kernel's page cache charged to the container) and to the collector's lag.
const Share = 0.9

// Files are the cgroup files read, in order: cgroup v2's memory.max, then cgroup v1's
// memory.limit_in_bytes.
var Files = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// unlimitedV1 is the smallest value cgroup v1 reports for "no limit" (the largest int64
// rounded down to a page).
const unlimitedV1 = math.MaxInt64 &^ (1<<30 - 1)

// Decide returns the soft limit to set, in bytes, and a sentence saying why, for the log.
// GOMEMLIMIT, when set (even to "off"), wins: the runtime has already applied it and the limit is
// 0 (leave it). Otherwise the first readable cgroup file with a limit gives Share of it; "max", a
// value of v1's "unlimited", or no readable file gives 0.
func Decide(getenv func(string) (string, bool), readFile func(string) ([]byte, error)) (int64, string) {
	if v, ok := getenv("GOMEMLIMIT"); ok && v != "" {
		return 0, fmt.Sprintf("memory limit: GOMEMLIMIT=%s as set", v)
	}
	for _, f := range Files {
		b, err := readFile(f)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, "memory limit: none (the container has no memory limit; set GOMEMLIMIT to give one)"
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Sprintf("memory limit: none (%s holds %q, not a number of bytes; set GOMEMLIMIT to give one)", f, s)
		}
		if n >= unlimitedV1 {
			return 0, "memory limit: none (the container has no memory limit; set GOMEMLIMIT to give one)"
		}
		limit := int64(float64(n) * Share)
		return limit, fmt.Sprintf("memory limit: %d MiB, %.0f %% of the container's %d MiB (%s); set GOMEMLIMIT to choose another",
			limit>>20, Share*100, n>>20, f)
	}
	return 0, "memory limit: none (no cgroup memory limit found; set GOMEMLIMIT to give one)"
}

// Apply decides the limit from the process's environment and cgroup, sets it when there is one,
// and returns the sentence for the log.
func Apply() string {
	limit, why := Decide(os.LookupEnv, os.ReadFile)
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	return why
}
