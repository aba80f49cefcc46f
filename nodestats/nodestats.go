// Package nodestats is the contract between the node annotator, which writes node annotations,
// and the agents that read them (safe, pigeon, and the fixtures that stand for an annotator in
// tests): the annotations' names, how their values are written and read, their units, and what
// each statistic means. It is the only place these names are spelled; the annotator's README
// and the safe agent's README describe the same contract for operators.
//
// Every key is a plain annotation name, without a prefix. Every amount is written as a base-10
// integer (FormatAmount, FormatInt): millicores for cpu, bytes for memory and ephemeral
// storage, a count for pods and GPUs. Readers accept any decimal number (Parse, Lookup).
//
// The package depends on the standard library only, so that any module (an external annotator,
// the e2e module) can take the contract without taking the agents.
package nodestats

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// Allocation annotations, written every cycle by the node annotator: the summed requests of
// the non-terminated pods bound to the node (as kube-scheduler computes a pod's requests:
// containers, init containers and sidecars, pod-level resources, overhead), and allocatable
// minus that. The Free* annotations are left out while the node has not reported its
// allocatable resources; a resource missing from a reported allocatable list counts as 0 (so
// FreeGPU may be negative on a node without GPUs whose pods request one).
const (
	RequestedCPU              = "requested-cpu"               // millicores
	RequestedMemory           = "requested-memory"            // bytes
	RequestedPods             = "requested-pods"              // count
	RequestedGPU              = "requested-gpu"               // count of the GPU resource (the annotator's GPU_RESOURCE)
	RequestedEphemeralStorage = "requested-ephemeral-storage" // bytes

	FreeCPU              = "free-cpu"               // millicores
	FreeMemory           = "free-memory"            // bytes
	FreePods             = "free-pods"              // count
	FreeGPU              = "free-gpu"               // count
	FreeEphemeralStorage = "free-ephemeral-storage" // bytes
)

// Usage statistics annotations: the free cpu (millicores) and free memory (bytes) of the node,
// measured, not requested (from the metrics API: allocatable minus usage, which may be
// negative; from Prometheus: idle cpu and available memory), over the statistics window (the
// annotator's STATS_WINDOW, 15m by default), from one sample per step (INTERVAL, or
// PROMETHEUS_STEP), never from fewer than STATS_MIN_SAMPLES samples.
//
//   - Mean*: the mean of the samples.
//   - Std*: their population standard deviation (divided by n, not n - 1).
//   - Forcasted*: the one-step-ahead forecast of Holt's linear trend method over the samples
//     (annotator.Summarize gives the recurrence), not below 0 when no sample is negative.
//     "forcasted" is the spelling deployed annotators write and deployed agents read; readers
//     read it first, then Forecasted* (the correct spelling) when it is absent or unreadable.
//
// The annotator rewrites a statistic only when it moved beyond STATS_TOLERANCE of the written
// value, and all of them, with StatisticsTimestamp, StatisticsRequestedCPU,
// StatisticsRequestedMemory and StatisticsWindow, when one moved or the timestamp is
// STATS_REFRESH old.
const (
	MeanFreeCPU          = "mean-free-cpu"
	StdFreeCPU           = "std-free-cpu"
	ForcastedFreeCPU     = "forcasted-free-cpu"
	ForecastedFreeCPU    = "forecasted-free-cpu"
	MeanFreeMemory       = "mean-free-memory"
	StdFreeMemory        = "std-free-memory"
	ForcastedFreeMemory  = "forcasted-free-memory"
	ForecastedFreeMemory = "forecasted-free-memory"

	// StatisticsTimestamp is when the statistics were computed: the end of the window they
	// cover, in RFC 3339 at UTC (FormatTimestamp). It is written with every statistics patch
	// and refreshed at least every STATS_REFRESH (30m by default), so that a reader can tell
	// fresh statistics from those of an annotator that stopped. Annotators of the original
	// design write none: how a reader treats a missing or old timestamp is its own policy (the
	// safe agent's SAFE_MAX_STATS_AGE and SAFE_STALE).
	StatisticsTimestamp = "statistics-timestamp"

	// StatisticsRequestedCPU and StatisticsRequestedMemory are the node's RequestedCPU
	// (millicores) and RequestedMemory (bytes) when the statistics were written, with every
	// statistics patch: a reader adds to the statistics the requests grown since (pods placed
	// less pods gone), which the statistics cannot hold yet.
	StatisticsRequestedCPU    = "statistics-requested-cpu"
	StatisticsRequestedMemory = "statistics-requested-memory"

	// StatisticsWindow is the span the statistics cover (the annotator's STATS_WINDOW), in whole
	// seconds (FormatWindow), with every statistics patch: a reader that weighs a pod by the
	// share of the window it was on the node (safe's node model) reads the window here, not a
	// default. Annotators before 2026-11-29 write none; readers then assume DefaultWindow.
	StatisticsWindow = "statistics-window"
)

// DefaultWindow is the annotator's STATS_WINDOW default: the window a reader assumes where
// StatisticsWindow is missing or unreadable.
const DefaultWindow = 15 * time.Minute

// FormatWindow writes a StatisticsWindow value: the window in whole seconds, base 10.
func FormatWindow(w time.Duration) string {
	return strconv.FormatInt(int64(w/time.Second), 10)
}

// Window reads StatisticsWindow from annotations: DefaultWindow when it is missing, not a
// number, or not at least one second.
func Window(annotations map[string]string) time.Duration {
	v, ok := Lookup(annotations, StatisticsWindow)
	if !ok || v < 1 || v > float64(math.MaxInt64/int64(time.Second)) {
		return DefaultWindow
	}
	return time.Duration(v * float64(time.Second))
}

// FormatAmount writes an amount as the annotator does: rounded to the nearest integer (half
// away from zero), in base 10.
func FormatAmount(v float64) string {
	return strconv.FormatInt(int64(math.Round(v)), 10)
}

// FormatInt writes an integer amount (a sum of requests, a count) in base 10.
func FormatInt(v int64) string {
	return strconv.FormatInt(v, 10)
}

// errNotFinite is Parse's error for NaN and infinities (which strconv.ParseFloat accepts).
var errNotFinite = errors.New("not a finite number")

// Parse reads an amount strictly: a decimal number as strconv.ParseFloat reads it (so out of
// range, "1e999", is an error), finite. Surrounding spaces are an error; Lookup allows them.
func Parse(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errNotFinite
	}
	return v, nil
}

// Lookup reads annotation key of annotations as an amount: present and readable (ok) when it
// is a finite decimal number, surrounding spaces allowed. Missing, empty, unparseable, NaN and
// infinite values are absent (0, false).
func Lookup(annotations map[string]string, key string) (float64, bool) {
	s, ok := annotations[key]
	if !ok || s == "" {
		return 0, false
	}
	v, err := Parse(strings.TrimSpace(s))
	return v, err == nil
}

// FormatTimestamp writes t as StatisticsTimestamp holds it: RFC 3339 at UTC, to the second.
func FormatTimestamp(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}

// ParseTimestamp reads a StatisticsTimestamp value strictly (RFC 3339; no surrounding spaces).
func ParseTimestamp(s string) (time.Time, error) {
	return time.Parse(time.RFC3339, s)
}
