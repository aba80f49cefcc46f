//go:build pigeon || all

package main

import "github.com/kube-safe-scheduler/extender/agents/pigeon"

// The pigeon agent (build tag "pigeon").
func init() { compiled = append(compiled, pigeon.Registration) }
