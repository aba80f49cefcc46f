package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
)

// T is what the harness needs from a test: *testing.T, *testing.B and testing.TB satisfy it,
// and so does *Session for programs such as the demo.
type T interface {
	Helper()
	Name() string
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
	Failed() bool
	TempDir() string
	Context() context.Context
}

// Session is a T for programs (the demo, benchmarks run as commands): it collects cleanups and
// runs them, last registered first, on Close. Fatalf prints its message, closes the session and
// exits the program with status 1.
type Session struct {
	out    io.Writer
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	cleanups []func()
	failed   bool
	closed   bool
}

var _ T = (*Session)(nil)

// NewSession returns a Session that logs to out (os.Stderr when nil).
func NewSession(out io.Writer) *Session {
	if out == nil {
		out = os.Stderr
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Session{out: out, ctx: ctx, cancel: cancel}
}

// Helper does nothing; it exists to satisfy T.
func (s *Session) Helper() {}

// Name returns "session".
func (s *Session) Name() string { return "session" }

// Logf prints a line to the session's output.
func (s *Session) Logf(format string, args ...any) {
	fmt.Fprintf(s.out, format+"\n", args...)
}

// Fatalf prints the message, runs every cleanup and exits the program with status 1.
func (s *Session) Fatalf(format string, args ...any) {
	s.mu.Lock()
	s.failed = true
	s.mu.Unlock()
	fmt.Fprintf(s.out, "error: "+format+"\n", args...)
	s.Close()
	os.Exit(1)
}

// Cleanup registers f to run on Close; cleanups run last registered first.
func (s *Session) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

// Failed reports whether Fatalf was called.
func (s *Session) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// TempDir returns a new temporary directory, removed on Close.
func (s *Session) TempDir() string {
	dir, err := os.MkdirTemp("", "kss-e2e-")
	if err != nil {
		s.Fatalf("temporary directory: %v", err)
	}
	s.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Context returns a context canceled when Close starts.
func (s *Session) Context() context.Context { return s.ctx }

// Close cancels the session's context and runs the cleanups, last registered first. It stops
// every process started through the session. Calling it again does nothing.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	for {
		s.mu.Lock()
		n := len(s.cleanups)
		if n == 0 {
			s.mu.Unlock()
			return
		}
		f := s.cleanups[n-1]
		s.cleanups = s.cleanups[:n-1]
		s.mu.Unlock()
		f()
	}
}
