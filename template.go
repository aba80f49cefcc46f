//go:build template || all

package main

import (
	"github.com/kube-safe-scheduler/extender/agents/template"
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
)

// Template registers the template agent (build tag "template").
func (builtins) Template() plugin {
	return plugin{name: template.Name, declare: func(s *settings.Set) func(deps) (framework.Agent, error) {
		var cfg template.Config
		cfg.Declare(s)
		return func(deps) (framework.Agent, error) { return template.New(cfg) }
	}}
}
