//go:build reward || all

package main

import "github.com/kube-safe-scheduler/extender/agents/reward"

// The reward agent (build tag "reward").
func init() { compiled = append(compiled, reward.Registration) }
