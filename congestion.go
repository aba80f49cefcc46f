//go:build congestion || all

package main

import "github.com/kube-safe-scheduler/extender/agents/congestion"

// The congestion agent (build tag "congestion").
func init() { compiled = append(compiled, congestion.Registration) }
