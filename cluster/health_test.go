package cluster

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func levels(hook *logtest.Hook) []logrus.Level {
	var out []logrus.Level
	for _, e := range hook.AllEntries() {
		if e.Level <= logrus.InfoLevel {
			out = append(out, e.Level)
		}
	}
	return out
}

// An outage is logged once when it starts and once when it ends, however many requests fail
// or succeed in between.
func TestHealthLogsOutageOnce(t *testing.T) {
	l, hook := logtest.NewNullLogger()
	l.SetLevel(logrus.DebugLevel)
	h := newAPIHealth(logrus.NewEntry(l))

	h.success() // healthy from the start: nothing to say
	for range 5 {
		h.failure("GET /api/v1/pods", errors.New("connection refused"))
	}
	if !h.Lost() {
		t.Error("Lost() = false during an outage")
	}
	for range 3 {
		h.success()
	}
	if h.Lost() {
		t.Error("Lost() = true after recovery")
	}
	// A second outage is a new event.
	h.failure("GET /api/v1/nodes", errors.New("connection refused"))
	h.success()

	want := []logrus.Level{logrus.WarnLevel, logrus.InfoLevel, logrus.WarnLevel, logrus.InfoLevel}
	if got := levels(hook); !equalLevels(got, want) {
		t.Errorf("logged at levels %v, want %v", got, want)
	}
}

func equalLevels(a, b []logrus.Level) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Routine ends of a watch are not outages.
func TestWatchErrorHandler(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	cases := []struct {
		name string
		err  error
		lost bool
	}{
		{"clean end", io.EOF, false},
		{"expired resource version", apierrors.NewResourceExpired("too old"), false},
		{"gone", apierrors.NewGone("gone"), false},
		{"connection refused", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), true},
		{"forbidden", apierrors.NewForbidden(gr, "", errors.New("no RBAC")), true},
		{"unexpected EOF", io.ErrUnexpectedEOF, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newAPIHealth(quietLog())
			h.watchErrorHandler("pods")(context.Background(), nil, c.err)
			if h.Lost() != c.lost {
				t.Errorf("Lost() = %v, want %v", h.Lost(), c.lost)
			}
		})
	}
	t.Run("cancelled context", func(t *testing.T) {
		h := newAPIHealth(quietLog())
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		h.watchErrorHandler("pods")(ctx, nil, errors.New("connection refused"))
		if h.Lost() {
			t.Error("a failure during shutdown counted as an outage")
		}
	})
}

// The transport observer sees every request the client makes.
func TestObserver(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	defer srv.Close()
	h := newAPIHealth(quietLog())
	client := &http.Client{Transport: h.wrap(http.DefaultTransport)}
	get := func(url string) {
		t.Helper()
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
		}
	}

	status = http.StatusServiceUnavailable
	get(srv.URL)
	if !h.Lost() {
		t.Error("a 503 did not count as a failure")
	}
	status = http.StatusOK
	get(srv.URL)
	if h.Lost() {
		t.Error("a 200 did not count as a success")
	}
	// A 404 says the server is up but proves nothing new: the state stays.
	h.failure("x", errors.New("down"))
	status = http.StatusNotFound
	get(srv.URL)
	if !h.Lost() {
		t.Error("a 404 counted as a recovery")
	}
	status = http.StatusOK
	get(srv.URL)

	// A 503 right after a success is one resource's problem (a starting API server answers 503
	// for custom resources it has not installed yet), not an outage; after the grace it is one.
	status = http.StatusServiceUnavailable
	get(srv.URL)
	if h.Lost() {
		t.Error("a 503 within the grace of a success counted as an outage")
	}
	later := time.Now().Add(serverErrorGrace + time.Second)
	h.now = func() time.Time { return later }
	get(srv.URL)
	if !h.Lost() {
		t.Error("a 503 long after the last success did not count as a failure")
	}
	h.now = time.Now
	status = http.StatusOK
	get(srv.URL)

	// No server at all.
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	get(url)
	if !h.Lost() {
		t.Error("a refused connection did not count as a failure")
	}
}

func TestRouteKlogLevels(t *testing.T) {
	l, hook := logtest.NewNullLogger()
	l.SetLevel(logrus.DebugLevel)
	sink := &klogSink{log: logrus.NewEntry(l)}
	if !sink.Enabled(0) || sink.Enabled(4) {
		t.Errorf("at debug level: Enabled(0) = %v, Enabled(4) = %v; want true, false", sink.Enabled(0), sink.Enabled(4))
	}
	sink.WithName("reflector").WithValues("type", "*v1.Pod").Info(0, "Warning: watch ended with error")
	sink.Error(errors.New("boom"), "failed")
	entries := hook.AllEntries()
	if len(entries) != 2 {
		t.Fatalf("%d entries, want 2", len(entries))
	}
	for _, e := range entries {
		if e.Level != logrus.DebugLevel {
			t.Errorf("%q logged at %v, want debug", e.Message, e.Level)
		}
	}
	if entries[0].Data["type"] != "*v1.Pod" || entries[0].Data["logger"] != "reflector" {
		t.Errorf("fields lost: %v", entries[0].Data)
	}
}
