//go:build safe || all

package main

import "github.com/kube-safe-scheduler/extender/agents/safe"

// The safe agent (build tag "safe").
func init() { compiled = append(compiled, safe.Registration) }
