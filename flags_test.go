package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// parseInterspersed reads flags on either side of the positional arguments, keeps those in
// order, stops reading flags at "--", and fails as fs.Parse does on an unknown flag or a bad value.
func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		positional []string
		url        string
		timeout    time.Duration
		err        string
	}{
		{args: nil},
		{args: []string{"pod"}, positional: []string{"pod"}},
		{args: []string{"--url", "u", "pod"}, positional: []string{"pod"}, url: "u"},
		// The case Go's flag package alone gets wrong: it stops at "pod" and leaves the flags as arguments.
		{args: []string{"pod", "--url", "u", "--timeout", "3s"}, positional: []string{"pod"}, url: "u", timeout: 3 * time.Second},
		{args: []string{"--url=u", "a", "--timeout=1s", "b"}, positional: []string{"a", "b"}, url: "u", timeout: time.Second},
		{args: []string{"a", "--", "--url", "b"}, positional: []string{"a", "--url", "b"}},
		{args: []string{"-", "--url", "u"}, positional: []string{"-"}, url: "u"},
		{args: []string{"pod", "--bogus"}, err: "flag provided but not defined: -bogus"},
		{args: []string{"pod", "--timeout", "soon"}, err: `invalid value "soon" for flag -timeout`},
		{args: []string{"pod", "--url"}, err: "flag needs an argument: -url"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var out bytes.Buffer
		fs.SetOutput(&out)
		url := fs.String("url", "", "")
		timeout := fs.Duration("timeout", 0, "")
		got, err := parseInterspersed(fs, tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if diff := cmp.Diff(tc.positional, got); diff != "" {
			t.Errorf("%q: positional arguments (-want +got):\n%s", tc.args, diff)
		}
		if *url != tc.url || *timeout != tc.timeout {
			t.Errorf("%q: --url %q --timeout %s, want %q and %s", tc.args, *url, *timeout, tc.url, tc.timeout)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseInterspersed(fs, []string{"pod", "-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h after an argument: %v, want flag.ErrHelp", err)
	}
}

// The subcommands that take an argument read their flags after it too: extender probe URL
// --timeout 1s probes; convert-policy FILE -h is help, not a usage error.
func TestSubcommandFlagsAfterArgument(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer ok.Close()
	for _, tc := range []struct {
		cmd  func(context.Context, []string, io.Writer, io.Writer) int
		args []string
		code int
		want string
	}{
		{probe, []string{ok.URL + "/healthz", "--timeout", "3s"}, 0, ""},
		{probe, []string{ok.URL + "/healthz", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{probe, []string{ok.URL, ok.URL}, 2, "give exactly one URL"},
		{convertPolicy, []string{"internal/deploygen/schedconfig/testdata/tas-policy.json", "-h"}, 0, "Usage: extender convert-policy"},
		{convertPolicy, []string{"internal/deploygen/schedconfig/testdata/tas-policy.json", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{convertPolicy, []string{"a.json", "b.json"}, 2, "Usage: extender convert-policy"},
	} {
		var out, errOut bytes.Buffer
		code := tc.cmd(context.Background(), tc.args, &out, &errOut)
		if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%q: exit %d, %q; want %d and %q", tc.args, code, errOut.String(), tc.code, tc.want)
		}
	}
}
