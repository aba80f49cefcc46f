// The --pprof-addr listener: net/http/pprof on a loopback address only.

package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/sirupsen/logrus"
)

// checkPprofAddr accepts "" (off) or a host:port whose host is a loopback address or localhost:
// the profiles are served without authentication, so never on an address others can reach.
func checkPprofAddr(v string) error {
	if v == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil || port == "" {
		return fmt.Errorf("%q is not host:port", v)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%q: the host must be a loopback address (127.0.0.1, ::1) or localhost", v)
	}
	return nil
}

// servePprof serves net/http/pprof's handlers on addr until ctx ends.
func servePprof(ctx context.Context, addr string, log logrus.FieldLogger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen (PPROF_ADDR or --pprof-addr %q): %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	go srv.Serve(ln)
	log.WithField("address", ln.Addr().String()).Warn("serving Go profiles at /debug/pprof/ (PPROF_ADDR)")
	return nil
}
