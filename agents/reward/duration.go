package reward

import (
	"fmt"
	"time"
)

// Duration is a time.Duration written as Go duration text ("10s", "24h") in JSON (a scheduler's
// pluginConfig args), in environment variables and flags, instead of integer nanoseconds. It is
// this agent's own: a shared one may replace it.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: Go duration syntax (30s, 5m, 24h, 0).
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration (write it as 30s, 5m or 24h)", b)
	}
	*d = Duration(v)
	return nil
}
