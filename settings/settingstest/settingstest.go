// Package settingstest gives tests a settings.Set that reads a fixed environment, on a fresh,
// silent flag set, as net/http/httptest gives them servers.
package settingstest

import (
	"errors"
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

// Parse declares a configuration of type C (a type with a Declare(*settings.Set) method on its
// pointer, as every agent's Config has) on New(env), parses args, and returns it with the
// parse error.
func Parse[C any, P interface {
	*C
	Declare(*settings.Set)
}](env map[string]string, args ...string) (C, error) {
	s := New(env)
	var c C
	P(&c).Declare(s)
	err := s.Parse(args)
	return c, err
}

// Bind binds a configuration holding defaults on New(env) (settings.Set.Bind), parses args, and
// validates it, returning it with every error named the way the extender names them: values
// that do not parse, and Validate's FieldErrors by variable and flag.
func Bind[C any, P interface {
	*C
	Validate() error
}](defaults C, env map[string]string, args ...string) (C, error) {
	s := New(env)
	c := defaults
	b := s.Bind(&c)
	perr := s.Parse(args)
	return c, errors.Join(perr, b.Describe(P(&c).Validate()))
}
