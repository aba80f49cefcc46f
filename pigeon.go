//go:build pigeon || all

package main

import (
	"github.com/kube-safe-scheduler/extender/agents/pigeon"
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
)

// Pigeon registers the pigeon agent (build tag "pigeon"). Its pigeon.cfg file, when given,
// fills only the settings that no flag or variable set.
func (builtins) Pigeon() plugin {
	return plugin{name: pigeon.Name, declare: func(s *settings.Set) func(deps) (framework.Agent, error) {
		var cfg pigeon.Config
		cfg.Declare(s)
		return func(d deps) (framework.Agent, error) {
			if err := cfg.ApplyFile(s.Explicit); err != nil {
				return nil, err
			}
			return pigeon.New(cfg, d.cluster, d.log)
		}
	}}
}
