//go:build telemetry || all

package main

import "github.com/kube-safe-scheduler/extender/agents/telemetry"

// The telemetry agent (build tag "telemetry").
func init() { compiled = append(compiled, telemetry.Registration) }
