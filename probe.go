// The probe subcommand: extender probe is the exec probe of the distroless images.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/kube-safe-scheduler/extender/internal/tlsreload"
)

// probe is an exec probe for distroless images (no shell, no curl): it GETs a URL of the
// extender (http://127.0.0.1:5401/healthz) and exits 0 on 200, 1 otherwise. The kubelet's
// httpGet probes are sent to the pod IP, which a listener on 127.0.0.1 does not serve; this one
// runs inside the container.
func probe(ctx context.Context, args []string, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("extender probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	caFile := fs.String("ca-file", "", "PEM CA bundle to verify an https server with (default: the system roots)")
	certFile := fs.String("cert-file", "", "PEM client certificate to present (mutual TLS)")
	keyFile := fs.String("key-file", "", "PEM key of --cert-file")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: extender probe [flags] URL\n\nGETs URL and exits 0 when it answers 200 (an exec probe).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	// Flags may come before or after the URL (flags.go).
	urls, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if len(urls) != 1 {
		fmt.Fprintln(stderr, "extender probe: give exactly one URL, e.g. http://127.0.0.1:5401/healthz")
		return 2
	}
	u, err := url.Parse(urls[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(stderr, "extender probe: %q is not an http or https URL\n", urls[0])
		return 2
	}
	transport := &http.Transport{DisableKeepAlives: true}
	if u.Scheme == "https" || *caFile != "" || *certFile != "" || *keyFile != "" {
		c, err := tlsreload.ClientConfig(*caFile, *certFile, *keyFile)
		if err != nil {
			fmt.Fprintf(stderr, "extender probe: %v\n", err)
			return 2
		}
		transport.TLSClientConfig = c
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		fmt.Fprintf(stderr, "extender probe: %v\n", err)
		return 2
	}
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "extender probe: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "extender probe: %s: %s %s\n", u, resp.Status, strings.TrimSpace(string(body)))
		return 1
	}
	return 0
}
