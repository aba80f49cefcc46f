package server

import (
	"context"
	"errors"
	stdlog "log"
	"net"
	"net/http"
	"time"

	"github.com/sirupsen/logrus"
)

// Timeouts of the HTTP server. The client's own timeout (kube-scheduler's httpTimeout, 5 s by
// default, longer where a user sets it) decides how long an answer is worth waiting for; the
// server's read and write bounds only guard against a client that hangs, so they are longer
// than any httpTimeout a user would set. At 5 s they closed connections without an answer
// (the client saw EOF) for a user who raised httpTimeout, and under CPU starvation (7 of 10,000
// requests in the load test with both cores busy), while saving nothing: Go does not stop a
// handler when its write times out.
const (
	ReadHeaderTimeout = 2 * time.Second
	ReadTimeout       = 30 * time.Second
	WriteTimeout      = 30 * time.Second
	// IdleTimeout keeps the scheduler's keep-alive connections open between pods.
	IdleTimeout = 2 * time.Minute
	// ShutdownTimeout bounds the wait for requests in flight after SIGTERM.
	ShutdownTimeout = 10 * time.Second
	maxHeaderBytes  = 64 << 10
)

// Serve serves h on ln until ctx is done, then shuts down gracefully: it stops accepting, lets the
// requests in flight finish (within ShutdownTimeout) and returns.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *logrus.Logger) error {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          newStdLogger(log),
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing requests in flight")
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// newStdLogger routes net/http's own messages (TLS handshakes, header errors) to log at warning.
// Those messages start with "http: " already.
func newStdLogger(log *logrus.Logger) *stdlog.Logger {
	return stdlog.New(log.WriterLevel(logrus.WarnLevel), "", 0)
}
