// Package settingstest gives tests a settings.Set that reads a fixed environment, on a fresh,
// silent flag set, as net/http/httptest gives them servers.
package settingstest

import (
	"flag"
	"io"

	"github.com/kube-safe-scheduler/extender/settings"
)

// New returns a settings.Set whose environment is exactly env (nil: empty), on a new flag set
// that returns parse errors instead of exiting and prints nothing.
func New(env map[string]string) *settings.Set {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return settings.New(fs, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
}
