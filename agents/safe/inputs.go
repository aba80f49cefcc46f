package safe

import (
	"strings"
	"time"
)

// resourceInputs are what the agent reads of a node for one resource: the blended free amount,
// its standard deviation and the allocatable amount, before any pod's demand is added.
type resourceInputs struct {
	measured            bool // the mean annotation is present and readable
	free, std, capacity float64
	forecast            bool
}

// nodeInputs are a node's inputs for both resources, memoized per node version
// (framework.NodeMemo): reading them costs about half of a filter call (six annotation
// lookups, up to four float parses, a quantity conversion).
type nodeInputs struct {
	cpu, memory resourceInputs
	stamp       stamp
	// requested is the node annotator's requested-cpu and requested-memory, when both are
	// readable (requestedKnown).
	requested      demand
	requestedKnown bool
	// stampRequested is the node's requests when its statistics were written (the annotator's
	// statistics-requested-cpu and -memory), when both are readable (stampRequestedKnown).
	stampRequested      demand
	stampRequestedKnown bool
}

// stamp is what the statistics-timestamp annotation says. Whether it is fresh depends on the
// time of each call, so the memo keeps the timestamp, never a verdict on it.
type stamp struct {
	// present: the annotation is there and not blank; readable: it parses as RFC 3339, at at.
	present, readable bool
	at                time.Time
	// raw is an unreadable value, for the reason.
	raw string
}

// readStamp reads a statistics-timestamp annotation value ("" when missing).
func readStamp(v string) stamp {
	v = strings.TrimSpace(v)
	if v == "" {
		return stamp{}
	}
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return stamp{present: true, raw: v}
	}
	return stamp{present: true, readable: true, at: at}
}

// freshness is a node's statistics' freshness at the time of one call.
type freshness struct {
	stale bool
	// age is the call's time minus the timestamp (negative: the timestamp is ahead of this
	// clock); unreadable, with raw, tells a timestamp that is not RFC 3339.
	age        time.Duration
	unreadable bool
	raw        string
}

// freshness judges s at now: a missing timestamp is fresh (annotators of the original design
// write none); an unreadable one is stale (nothing vouches for the statistics); a readable one
// is stale when it is more than maxAge old, or more than maxAge ahead of now (a writer whose
// clock is that far off vouches for nothing either).
func (s stamp) freshness(now time.Time, maxAge time.Duration) freshness {
	switch {
	case !s.present:
		return freshness{}
	case !s.readable:
		return freshness{stale: true, unreadable: true, raw: s.raw}
	}
	age := now.Sub(s.at)
	return freshness{stale: age > maxAge || age < -maxAge, age: age}
}
