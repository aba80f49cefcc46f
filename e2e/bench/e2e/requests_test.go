package main

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseRequests(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{defaultRequests, "[100m/128Mi]"},
		{"mixed", "[250m/512Mi 500m/1Gi 1/2Gi 2/4Gi]"},
		{" 1 / 2Gi , 300m/100M", "[1/2Gi 300m/100M]"},
	} {
		got, err := parseRequests(c.in)
		if err != nil {
			t.Errorf("parseRequests(%q): %v", c.in, err)
			continue
		}
		if s := fmt.Sprint(got); s != c.want {
			t.Errorf("parseRequests(%q) = %s, want %s", c.in, s, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"", `"" is not cpu/memory`},
		{"100m", `"100m" is not cpu/memory`},
		{"100m/128Mi,", `"" is not cpu/memory`},
		{"1/2/3", `"1/2/3" is not cpu/memory`},
		{"100x/128Mi", `cpu "100x" is not a quantity`},
		{"100m/lots", `memory "lots" is not a quantity`},
		{"0/128Mi", `cpu "0" must be above 0`},
		{"100m/-1Gi", `memory "-1Gi" must be above 0`},
		{"Mixed", `"Mixed" is not cpu/memory`},
	} {
		_, err := parseRequests(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "-requests: ") {
			t.Errorf("parseRequests(%q): %v, want an error naming -requests and saying %s", c.in, err, c.want)
		}
	}
}

func TestRequestOfTakesTheClassesInTurn(t *testing.T) {
	classes, err := parseRequests("mixed")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range 6 {
		got = append(got, requestOf(classes, i).String())
	}
	if s := strings.Join(got, " "); s != "250m/512Mi 500m/1Gi 1/2Gi 2/4Gi 250m/512Mi 500m/1Gi" {
		t.Errorf("pods 0-5 request %s", s)
	}
}
