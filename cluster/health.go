package cluster

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// apiHealth tracks whether the API server answers, from what the informers see, so that an
// outage is logged once when it starts and once when it ends, however many retries it takes.
//
// Failures come from the informers' watch error handler (a list or watch that failed) and from
// the client transport (a request that got no answer or a 5xx). Successes come from the
// transport: any 2xx answer. The informers keep the last state they listed, so while the server
// is away the process goes on serving from its cache.
//
// A 5xx from a server that answered another request successfully within serverErrorGrace is not
// an outage: a starting kube-apiserver serves the core API while it still answers 503 for custom
// resources it has not installed yet, which would otherwise log the outage's end and a new one.
type apiHealth struct {
	log *logrus.Entry
	now func() time.Time

	mu          sync.Mutex
	lost        bool
	lastSuccess time.Time
}

// serverErrorGrace is how long after a successful answer a 5xx answer is taken for a problem of
// one resource rather than of the API server.
const serverErrorGrace = 10 * time.Second

func newAPIHealth(log *logrus.Entry) *apiHealth { return &apiHealth{log: log, now: time.Now} }

// serverError records a 5xx answer to request what: a failure unless the server answered
// another request successfully within serverErrorGrace.
func (h *apiHealth) serverError(what string, err error) {
	h.mu.Lock()
	answering := !h.lost && !h.lastSuccess.IsZero() && h.now().Sub(h.lastSuccess) < serverErrorGrace
	h.mu.Unlock()
	if answering {
		h.log.WithField("request", what).Debugf("the API server answered with an error: %v", err)
		return
	}
	h.failure(what, err)
}

// failure records that a request to the API server failed with err.
func (h *apiHealth) failure(what string, err error) {
	h.mu.Lock()
	first := !h.lost
	h.lost = true
	h.mu.Unlock()
	if first {
		h.log.WithField("request", what).Warnf("lost contact with the API server, serving from the cache until it is back: %v", err)
		return
	}
	h.log.WithField("request", what).Debugf("the API server is still unreachable: %v", err)
}

// success records that the API server answered a request.
func (h *apiHealth) success() {
	h.mu.Lock()
	recovered := h.lost
	h.lost = false
	h.lastSuccess = h.now()
	h.mu.Unlock()
	if recovered {
		h.log.Info("the API server is reachable again; the caches are catching up")
	}
}

// Lost reports whether the last request to the API server failed.
func (h *apiHealth) Lost() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lost
}

// watchErrorHandler replaces client-go's default handler, which logs every failed retry.
// A watch that ends normally (EOF) or with an expired resource version is routine: the
// informer lists again and nothing is lost.
func (h *apiHealth) watchErrorHandler(kind string) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, _ *cache.Reflector, err error) {
		if ctx.Err() != nil || err == nil || errors.Is(err, io.EOF) ||
			apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return
		}
		h.failure("list/watch "+kind, err)
	}
}

// wrap observes every request of the client built on the wrapped transport.
func (h *apiHealth) wrap(rt http.RoundTripper) http.RoundTripper {
	return &observer{next: rt, health: h}
}

type observer struct {
	next   http.RoundTripper
	health *apiHealth
}

func (o *observer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := o.next.RoundTrip(req)
	switch {
	case req.Context().Err() != nil:
		// Cancelled by the caller (shutdown, a watch being closed): says nothing of the server.
	case err != nil:
		o.health.failure(req.Method+" "+req.URL.Path, err)
	case resp.StatusCode >= 500:
		o.health.serverError(req.Method+" "+req.URL.Path, errors.New(resp.Status))
	case resp.StatusCode < 300:
		o.health.success()
	}
	return resp, err
}

// RouteKlog sends what client-go logs through klog to log: its messages at debug level (the
// informers' retries while the API server is away would otherwise fill the log; Cache logs
// the outage itself once) and its verbose messages at trace level. klog is process-wide:
// call this once, from main.
func RouteKlog(log *logrus.Logger) {
	klog.SetLogger(logr.New(&klogSink{log: logrus.NewEntry(log)}))
}

// klogSink is a logr.LogSink writing to logrus.
type klogSink struct {
	log  *logrus.Entry
	name string
}

func (s *klogSink) Init(logr.RuntimeInfo) {}

func (s *klogSink) Enabled(level int) bool {
	if level > 0 {
		return s.log.Logger.IsLevelEnabled(logrus.TraceLevel)
	}
	return s.log.Logger.IsLevelEnabled(logrus.DebugLevel)
}

func (s *klogSink) Info(level int, msg string, kv ...any) {
	e := s.entry(kv)
	if level > 0 {
		e.Trace(msg)
		return
	}
	e.Debug(msg)
}

func (s *klogSink) Error(err error, msg string, kv ...any) {
	s.entry(kv).WithError(err).Debug(msg)
}

func (s *klogSink) WithValues(kv ...any) logr.LogSink {
	return &klogSink{log: s.entry(kv), name: s.name}
}

func (s *klogSink) WithName(name string) logr.LogSink {
	if s.name != "" {
		name = s.name + "/" + name
	}
	return &klogSink{log: s.log, name: name}
}

func (s *klogSink) entry(kv []any) *logrus.Entry {
	fields := logrus.Fields{"source": "client-go"}
	if s.name != "" {
		fields["logger"] = s.name
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok {
			fields[k] = kv[i+1]
		}
	}
	return s.log.WithFields(fields)
}
