//go:build safe || all

package main

import (
	"github.com/kube-safe-scheduler/extender/agents/safe"
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
)

// Safe registers the safe agent (build tag "safe").
func (builtins) Safe() plugin {
	return plugin{name: safe.Name, declare: func(s *settings.Set) func(deps) (framework.Agent, error) {
		var cfg safe.Config
		cfg.Declare(s)
		return func(d deps) (framework.Agent, error) { return safe.New(cfg, d.log) }
	}}
}
