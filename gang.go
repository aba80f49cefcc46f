//go:build gang || all

package main

import "github.com/kube-safe-scheduler/extender/agents/gang"

// The gang agent (build tag "gang").
func init() { compiled = append(compiled, gang.Registration) }
