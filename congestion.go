//go:build congestion || all

package main

import (
	"github.com/kube-safe-scheduler/extender/agents/congestion"
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
)

// Congestion registers the congestion agent (build tag "congestion").
func (builtins) Congestion() plugin {
	return plugin{name: congestion.Name, declare: func(s *settings.Set) func(deps) (framework.Agent, error) {
		var cfg congestion.Config
		cfg.Declare(s)
		return func(deps) (framework.Agent, error) { return congestion.New(cfg) }
	}}
}
