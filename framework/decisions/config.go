package decisions

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/kube-safe-scheduler/extender/settings"
)

// DefaultKept is how many decisions the extender keeps by default. kube-safe-scheduler (plugin
// mode) keeps none unless DECISIONS_KEPT is set: there, keeping them adds the agents'
// explanations to every cycle (docs/operations.md).
const DefaultKept = 1000

// MaxKept is the most decisions a log may keep.
const MaxKept = 100000

// ConfigzKey is the key under which kube-safe-scheduler publishes its decisions in /configz,
// where `extender explain --scheduler` reads them.
const ConfigzKey = "kube-safe-scheduler-decisions"

// Config is the setting of both modes: how many of the last decisions to keep (tags: see
// settings.Bind). The extender binds it with its other settings; kube-safe-scheduler, whose flags
// are kube-scheduler's, reads its variable (FromEnv).
type Config struct {
	Kept int `json:"decisionsKept" env:"DECISIONS_KEPT" flag:"decisions-kept" help:"how many of the last filter and prioritize decisions to keep for extender explain (the extender's GET /debug/decisions, loopback or verified client certificates only; kube-safe-scheduler's /configz); 0 keeps none"`
}

// Validate reports a Kept outside 0..MaxKept, as a settings.FieldError.
func (c Config) Validate() error {
	return settings.Range("decisionsKept", c.Kept, 0, MaxKept)
}

// FromEnv returns def with what the variable DECISIONS_KEPT (read with getenv) sets, validated:
// how kube-safe-scheduler reads the setting, through the same declaration as the extender. An
// error names the setting.
func FromEnv(getenv func(string) (string, bool), def Config) (Config, error) {
	fs := flag.NewFlagSet("kube-safe-scheduler", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s := settings.New(fs, getenv)
	cfg := def
	bound := s.Bind(&cfg)
	if err := errors.Join(s.Parse(nil), bound.Describe(cfg.Validate())); err != nil {
		// The flag the message names is the extender's: say so.
		return def, fmt.Errorf("%w (kube-safe-scheduler reads the variable only)", err)
	}
	return cfg, nil
}
