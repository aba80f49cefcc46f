// Package settings reads a program's configuration once, at start, from command-line flags and
// environment variables.
//
// Every setting has an environment variable (the name deployed yaml files already use) and a flag.
// A flag given on the command line wins over the variable; the variable wins over the default.
// A value that does not parse or is out of range is an error that names both the variable and
// the flag: it is never replaced by the default. Parse reports every bad setting at once.
package settings

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// Set collects the settings of a program: the server's own and those of each agent.
type Set struct {
	fs      *flag.FlagSet
	getenv  func(string) (string, bool)
	entries []*entry
	// warnings are Parse's notes on values accepted in an old spelling (Percent).
	warnings []string
}

type entry struct {
	env   string
	flag  string
	usage string
	def   string
	// set parses a raw value into the destination, validating it.
	set func(raw string) error
	// raw is the value the flag was given on the command line, if any.
	raw     string
	flagSet bool
	// explicit records, after Parse, that the flag or the variable gave the value.
	explicit bool
}

// New returns an empty Set whose flags belong to fs and whose variables are read with getenv
// (os.LookupEnv when nil).
func New(fs *flag.FlagSet, getenv func(string) (string, bool)) *Set {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	return &Set{fs: fs, getenv: getenv}
}

// FlagSet returns the flag set the settings are declared on.
func (s *Set) FlagSet() *flag.FlagSet { return s.fs }

func (s *Set) add(env, flagName, usage, def string, set func(string) error) {
	e := &entry{env: env, flag: flagName, usage: usage, def: def, set: set}
	s.entries = append(s.entries, e)
	help := usage
	if env != "" {
		help = fmt.Sprintf("%s (env %s)", usage, env)
	}
	s.fs.Func(flagName, fmt.Sprintf("%s (default %q)", help, def), func(v string) error {
		e.raw, e.flagSet = v, true
		return nil
	})
}

// Int declares an integer setting in [min, max] stored in dst, which holds def until Parse.
func (s *Set) Int(dst *int, env, flagName string, def, min, max int, usage string) {
	*dst = def
	s.add(env, flagName, usage, strconv.Itoa(def), func(raw string) error {
		v, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("%q is not an integer", raw)
		}
		if v < min || v > max {
			return fmt.Errorf("%d is out of range [%d, %d]", v, min, max)
		}
		*dst = v
		return nil
	})
}

// Int64 declares a 64-bit integer setting in [min, max].
func (s *Set) Int64(dst *int64, env, flagName string, def, min, max int64, usage string) {
	*dst = def
	s.add(env, flagName, usage, strconv.FormatInt(def, 10), func(raw string) error {
		v, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", raw)
		}
		if v < min || v > max {
			return fmt.Errorf("%d is out of range [%d, %d]", v, min, max)
		}
		*dst = v
		return nil
	})
}

// Float declares a floating-point setting in [min, max].
func (s *Set) Float(dst *float64, env, flagName string, def, min, max float64, usage string) {
	*dst = def
	s.add(env, flagName, usage, strconv.FormatFloat(def, 'g', -1, 64), func(raw string) error {
		v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil || v != v {
			return fmt.Errorf("%q is not a number", raw)
		}
		if v < min || v > max {
			return fmt.Errorf("%g is out of range [%g, %g]", v, min, max)
		}
		*dst = v
		return nil
	})
}

// Percent declares a setting that is a share, a percentile or a threshold: an integer percent
// in [min, max] (90 means 90 %), the one unit of every such setting (docs/configuration.md,
// "Units"). A decimal fraction in [0, 1] ("0.9") is the old spelling of a setting that used to
// be a fraction: for one release it is read as that fraction in percent, rounded, and Parse
// leaves a warning (Warnings) naming the setting, the value and its new spelling.
func (s *Set) Percent(dst *int, env, flagName string, def, min, max int, usage string) {
	*dst = def
	var e *entry
	s.add(env, flagName, usage+" (integer percent)", strconv.Itoa(def), func(raw string) error {
		text := strings.TrimSpace(raw)
		v, err := strconv.Atoi(text)
		if err != nil {
			f, ferr := strconv.ParseFloat(text, 64)
			if ferr != nil || !(f >= 0 && f <= 1) {
				return fmt.Errorf("%q is not an integer percent (90 means 90 %%)", raw)
			}
			v = int(math.Round(f * 100))
			s.warnings = append(s.warnings, fmt.Sprintf("%s=%s is a fraction, the old spelling of this setting: read as %d (percent); "+
				"write %s=%d, a fraction will be refused in a later release", e.label(), text, v, e.label(), v))
		}
		if v < min || v > max {
			return fmt.Errorf("%d is out of range [%d, %d] (percent)", v, min, max)
		}
		*dst = v
		return nil
	})
	e = s.entries[len(s.entries)-1]
}

// label names a setting in a warning by its variable, else its flag.
func (e *entry) label() string {
	if e.env != "" {
		return e.env
	}
	return "--" + e.flag
}

// Warnings returns, after Parse, what the program should log: values accepted in an old
// spelling, each naming its setting, the value and the new spelling.
func (s *Set) Warnings() []string { return s.warnings }

// Declared is a setting as declared: its variable, flag and default (as the help shows it).
type Declared struct {
	Env, Flag, Default string
}

// Declared returns every setting declared on s, in declaration order (the documentation's test
// compares them with docs/configuration.md).
func (s *Set) Declared() []Declared {
	out := make([]Declared, len(s.entries))
	for i, e := range s.entries {
		out[i] = Declared{Env: e.env, Flag: e.flag, Default: e.def}
	}
	return out
}

// Bool declares a boolean setting (true/false, 1/0, as strconv.ParseBool reads them). The flag
// may be given bare (--flag means --flag=true).
func (s *Set) Bool(dst *bool, env, flagName string, def bool, usage string) {
	*dst = def
	e := &entry{env: env, flag: flagName, usage: usage, def: strconv.FormatBool(def), set: func(raw string) error {
		v, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("%q is not true or false", raw)
		}
		*dst = v
		return nil
	}}
	s.entries = append(s.entries, e)
	help := usage
	if env != "" {
		help = fmt.Sprintf("%s (env %s)", usage, env)
	}
	s.fs.Var(&boolFlag{e}, flagName, fmt.Sprintf("%s (default %v)", help, def))
}

// boolFlag is a flag.Value that the flag package lets stand bare on the command line.
type boolFlag struct{ e *entry }

func (b *boolFlag) String() string   { return "" }
func (b *boolFlag) IsBoolFlag() bool { return true }
func (b *boolFlag) Set(v string) error {
	b.e.raw, b.e.flagSet = v, true
	return nil
}

// Duration declares a duration setting (Go syntax: 30s, 5m, 6h) in [min, max].
func (s *Set) Duration(dst *time.Duration, env, flagName string, def, min, max time.Duration, usage string) {
	*dst = def
	s.add(env, flagName, usage, def.String(), func(raw string) error {
		v, err := time.ParseDuration(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("%q is not a duration (e.g. 30s, 5m, 6h)", raw)
		}
		if v < min || v > max {
			return fmt.Errorf("%s is out of range [%s, %s]", v, min, max)
		}
		*dst = v
		return nil
	})
}

// String declares a string setting; check, when not nil, validates the value.
func (s *Set) String(dst *string, env, flagName, def, usage string, check func(string) error) {
	*dst = def
	s.add(env, flagName, usage, def, func(raw string) error {
		if check != nil {
			if err := check(raw); err != nil {
				return err
			}
		}
		*dst = raw
		return nil
	})
}

// Enum declares a string setting restricted to the given choices (compared case-insensitively;
// dst receives the choice as spelled in choices).
func (s *Set) Enum(dst *string, env, flagName, def string, choices []string, usage string) {
	*dst = def
	s.add(env, flagName, fmt.Sprintf("%s, one of %s", usage, strings.Join(choices, ", ")), def, func(raw string) error {
		for _, c := range choices {
			if strings.EqualFold(strings.TrimSpace(raw), c) {
				*dst = c
				return nil
			}
		}
		return fmt.Errorf("%q is not one of %s", raw, strings.Join(choices, ", "))
	})
}

// Parse parses args as flags, then applies, for every setting, the flag's value if given, else the
// environment variable's if set, else leaves the default. It returns every invalid setting,
// each named by its variable and flag.
func (s *Set) Parse(args []string) error {
	if err := s.fs.Parse(args); err != nil {
		return err
	}
	var errs []error
	for _, e := range s.entries {
		raw, source, ok := e.raw, "--"+e.flag, e.flagSet
		if !ok && e.env != "" {
			raw, ok = s.getenv(e.env)
			source = e.env
		}
		if !ok {
			continue
		}
		e.explicit = true
		if err := e.set(raw); err != nil {
			errs = append(errs, fmt.Errorf("invalid %s: %w", e.name(source), err))
		}
	}
	return errors.Join(errs...)
}

func (e *entry) name(source string) string {
	if e.env == "" || source == e.env {
		if e.env == "" {
			return source
		}
		return fmt.Sprintf("%s (or --%s)", e.env, e.flag)
	}
	return fmt.Sprintf("--%s (or %s)", e.flag, e.env)
}

// Explicit reports, after Parse, whether the setting with environment variable env was given a
// value by its flag or its variable (rather than left at its default). It lets a lower-priority
// source, such as a configuration file, fill only the settings nobody set.
func (s *Set) Explicit(env string) bool {
	for _, e := range s.entries {
		if e.env == env {
			return e.explicit
		}
	}
	return false
}
