//go:build template || all

package main

import "github.com/kube-safe-scheduler/extender/agents/template"

// The template agent (build tag "template").
func init() { compiled = append(compiled, template.Registration) }
