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

// DefaultInputsBytes bounds, by default, the heap the agents' inputs kept with the decisions
// hold (estimated: estimateBytes): in the all extender at 5000 nodes, the inputs of its last 7 or
// so functions' calls (most of one pod's cycle), and of the last dozens of pods on a cluster of
// a few hundred nodes. At 5000 nodes and 50,000 pods, the 50,000 nodes' inputs InputsKept alone
// allowed were 23 to 47 MB of the all extender's 226 to 240 MB live heap
// (docs/results/performance-history.md, "Memory at 5000 nodes / 50,000 pods, 2026-11-27").
const DefaultInputsBytes = 16 << 20

// MaxInputsBytes is the largest bound in bytes on the inputs kept.
const MaxInputsBytes = 1 << 34

// ConfigzKey is the key under which kube-safe-scheduler publishes its decisions in /configz,
// where `extender explain --scheduler` reads them.
const ConfigzKey = "kube-safe-scheduler-decisions"

// Config is the setting of both modes: how many of the last decisions to keep, and how much of
// the agents' inputs with them (tags: see settings.Bind). The extender binds it with its other
// settings; kube-safe-scheduler, whose flags are kube-scheduler's, reads its variables (FromEnv).
// The zero Config keeps nothing; set InputsBytes to DefaultInputsBytes for the default bound.
type Config struct {
	Kept int `json:"decisionsKept" env:"DECISIONS_KEPT" flag:"decisions-kept" help:"how many of the last filter and prioritize decisions to keep for extender explain (the extender's GET /debug/decisions, loopback or verified client certificates only; kube-safe-scheduler's /configz); 0 keeps none"`
	// InputsBytes bounds the agents' inputs kept with the decisions, in (estimated) bytes.
	InputsBytes int64 `json:"decisionsInputsBytes" env:"DECISIONS_INPUTS_BYTES" flag:"decisions-inputs-bytes" help:"most bytes (estimated) of what the agents saw of each node kept with the decisions for extender explain: the newest decisions keep theirs, older ones lose them first; 0 keeps none (the decisions then show verdicts and scores only)"`
}

// Validate reports a Kept outside 0..MaxKept and an InputsBytes outside 0..MaxInputsBytes, as
// settings.FieldErrors.
func (c Config) Validate() error {
	return errors.Join(settings.Range("decisionsKept", c.Kept, 0, MaxKept),
		settings.Range("decisionsInputsBytes", c.InputsBytes, 0, MaxInputsBytes))
}

// FromEnv returns def with what the variables DECISIONS_KEPT and DECISIONS_INPUTS_BYTES (read with
// getenv) set, validated:
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
