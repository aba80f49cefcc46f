package framework

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is the one duration type of every configuration: a time.Duration read and written as
// text in Go's syntax ("2s", "1m30s", "6h"), like metav1.Duration, in JSON as in environment
// variables and flags (settings.Bind accepts it as an encoding.TextUnmarshaler). A plain
// time.Duration would be written to JSON as nanoseconds and read "2s" as an error; a JSON number
// where a Duration is expected is an error naming the field (encoding/json's UnmarshalTypeError),
// never a count of nanoseconds. settings.Bind refuses a bare time.Duration field.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d compactly: whole hours, minutes and seconds without trailing zero units
// ("2h10m", "30m", "1m30s", "2h0m5s", "0s"); a duration that is not a whole number of seconds
// is written as time.Duration writes it ("1.5s", "250ms").
func (d Duration) String() string { return string(AppendDuration(nil, time.Duration(d))) }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return AppendDuration(nil, time.Duration(d)), nil }

// UnmarshalText implements encoding.TextUnmarshaler: it reads Go's syntax (time.ParseDuration).
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(strings.TrimSpace(string(text)))
	if err != nil {
		return fmt.Errorf("%q is not a duration (e.g. 30s, 5m, 6h)", text)
	}
	*d = Duration(v)
	return nil
}

// AppendDuration appends d to b in the compact form of Duration.String. It allocates nothing
// beyond b's growth: it serves filter reasons, which may be written for thousands of nodes.
func AppendDuration(b []byte, d time.Duration) []byte {
	if d%time.Second != 0 || d == minDuration {
		return append(b, d.String()...)
	}
	if d < 0 {
		b = append(b, '-')
		d = -d
	}
	if d == 0 {
		return append(b, "0s"...)
	}
	h, m, s := int64(d/time.Hour), int64(d%time.Hour/time.Minute), int64(d%time.Minute/time.Second)
	if h > 0 {
		b = append(strconv.AppendInt(b, h, 10), 'h')
	}
	if m > 0 || (h > 0 && s > 0) {
		b = append(strconv.AppendInt(b, m, 10), 'm')
	}
	if s > 0 {
		b = append(strconv.AppendInt(b, s, 10), 's')
	}
	return b
}

const minDuration = time.Duration(-1 << 63)
