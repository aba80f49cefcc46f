package framework

import (
	"encoding/json"
	"testing"
	"time"
)

func TestDurationText(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{30 * time.Minute, "30m"},
		{2*time.Hour + 10*time.Minute, "2h10m"},
		{2 * time.Hour, "2h"},
		{2*time.Hour + 5*time.Second, "2h0m5s"},
		{90 * time.Second, "1m30s"},
		{45 * time.Second, "45s"},
		{-90 * time.Second, "-1m30s"},
		{1500 * time.Millisecond, "1.5s"}, // not whole seconds: time.Duration's own form
		{250 * time.Millisecond, "250ms"},
	} {
		if got := Duration(c.d).String(); got != c.want {
			t.Errorf("%v: %q, want %q", c.d, got, c.want)
		}
		var back Duration
		if err := back.UnmarshalText([]byte(c.want)); err != nil || time.Duration(back) != c.d {
			t.Errorf("%q read back as %v, %v", c.want, time.Duration(back), err)
		}
	}
}

// In JSON a Duration is the same text, not nanoseconds, both ways; a bad one says what it is.
func TestDurationJSON(t *testing.T) {
	type cfg struct {
		Age Duration `json:"age"`
	}
	data, err := json.Marshal(cfg{Duration(30 * time.Minute)})
	if err != nil || string(data) != `{"age":"30m"}` {
		t.Fatalf("%s, %v", data, err)
	}
	var c cfg
	if err := json.Unmarshal([]byte(`{"age":" 1h30m "}`), &c); err != nil || time.Duration(c.Age) != 90*time.Minute {
		t.Fatalf("%v, %v", time.Duration(c.Age), err)
	}
	err = json.Unmarshal([]byte(`{"age":"soon"}`), &c)
	if err == nil || err.Error() != `"soon" is not a duration (e.g. 30s, 5m, 6h)` {
		t.Fatalf("error %v", err)
	}
}
