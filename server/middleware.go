package server

import (
	"fmt"
	"mime"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/kube-safe-scheduler/extender/framework/decisions"
)

// verb wraps the handler of one extender verb. Order, outermost first:
//
//  1. instrument: one metrics sample and one debug log line per request, whatever happens below;
//  2. recoverPanics: a panic in an agent becomes a 500 that instrument still sees;
//  3. requireJSON: 415 unless the body is declared as JSON;
//  4. h, which reads the body through readBody (413 past the size limit).
//
// Method checks (405) happen before all of this, in the router.
func (s *srv) verb(agent, function, verb string, h http.Handler) http.Handler {
	return s.instrument(agent, function, verb, recoverPanics(s.opts.Log, requireJSON(h)))
}

// recorder remembers what a handler answered, and what it learnt of the request, for the log
// line and the metrics.
type recorder struct {
	http.ResponseWriter
	status int
	pod    string
	nodes  int
	err    string
	// verdicts of a filter answer, for the metrics.
	verdicts verdictCounts
	// decision is what the handler decided, when decisions are kept.
	decision *decisions.Decision
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// note records the pod and node count of a request on w, when w is the instrumenting recorder.
func note(w http.ResponseWriter, pod string, nodes int) {
	if r, ok := w.(*recorder); ok {
		r.pod, r.nodes = pod, nodes
	}
}

func (s *srv) instrument(agent, function, verb string, next http.Handler) http.Handler {
	log := s.opts.Log
	obs := s.metrics.forRoute(agent, function, verb)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, req)
		elapsed := time.Since(start)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		obs.observe(rec.status, rec.err != "", rec.nodes, elapsed)
		obs.verdicts(rec.verdicts)
		if d := rec.decision; d != nil {
			d.Time, d.Pod, d.Agent, d.Function, d.Verb = start, rec.pod, agent, function, verb
			s.decisions.Add(*d)
		}

		switch {
		case rec.status >= 500:
			log.WithFields(logrus.Fields{"agent": agent, "function": function, "verb": verb, "pod": rec.pod,
				"status": rec.status}).Error(rec.err)
		case rec.status >= 400:
			log.WithFields(logrus.Fields{"agent": agent, "function": function, "verb": verb,
				"status": rec.status, "remote": req.RemoteAddr}).Warn("rejected request: ", rec.err)
		case log.IsLevelEnabled(logrus.DebugLevel):
			f := logrus.Fields{"agent": agent, "function": function, "verb": verb, "pod": rec.pod,
				"nodes": rec.nodes, "duration": elapsed.String()}
			if rec.err != "" {
				f["error"] = rec.err
			}
			log.WithFields(f).Debug("served")
		}
	})
}

// recoverPanics answers 500 with the panic's message when next panics, logs the stack, and lets
// the server go on.
func recoverPanics(log *logrus.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			log.WithField("path", req.URL.Path).Errorf("panic while serving: %v\n%s", v, debug.Stack())
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("internal error: %v", v))
		}()
		next.ServeHTTP(w, req)
	})
}

// requireJSON answers 415 unless the request declares a JSON body (application/json, with any
// parameters such as charset).
func requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ct := req.Header.Get("Content-Type")
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			if ct == "" {
				ct = "none"
			}
			writeError(w, http.StatusUnsupportedMediaType,
				fmt.Sprintf("Content-Type must be application/json, got %s", strconv.Quote(ct)))
			return
		}
		next.ServeHTTP(w, req)
	})
}
