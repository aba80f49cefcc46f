package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
)

// errorBody is the JSON answer of every failed request. Its one key, Error, is the key the
// scheduler's result types use for an error message.
type errorBody struct {
	Error string
}

var bufferPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer keeps a buffer that grew for one huge request from being held for ever.
const maxPooledBuffer = 8 << 20

func getBuffer() *bytes.Buffer { return bufferPool.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledBuffer {
		return
	}
	b.Reset()
	bufferPool.Put(b)
}

// readBody reads the request body into buf, at most limit bytes. On failure it has already
// answered (413 past the limit, 400 otherwise) and returns false.
func readBody(w http.ResponseWriter, req *http.Request, limit int64, buf *bytes.Buffer) bool {
	if req.ContentLength > limit {
		req.Close = true // do not drain what we will not read
		writeError(w, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes", req.ContentLength, limit))
		return false
	}
	if req.ContentLength > 0 {
		buf.Grow(int(req.ContentLength))
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, req.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("request body exceeds the limit of %d bytes", limit))
		return false
	case err != nil:
		writeError(w, http.StatusBadRequest, "reading request body: "+err.Error())
		return false
	}
	return true
}

// decodeJSON decodes body into v, or answers 400 naming the protocol's type and where the body
// is wrong (jsonProblem).
func decodeJSON(w http.ResponseWriter, body []byte, v any, what string) bool {
	if len(bytes.TrimSpace(body)) == 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("decoding %s: empty body", what))
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("decoding %s: %s", what, jsonProblem(body, v, err)))
		return false
	}
	return true
}

// writeJSON answers 200 with v encoded as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	writeAnswer(w, func(buf *bytes.Buffer) error {
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false) // reasons such as "risk 0.4 > 0.3" stay readable
		return enc.Encode(v)
	})
}

// writeAnswer answers 200 with the JSON that write appends to a pooled buffer, or 500 when it
// fails.
func writeAnswer(w http.ResponseWriter, write func(*bytes.Buffer) error) {
	buf := getBuffer()
	defer putBuffer(buf)
	if err := write(buf); err != nil {
		writeError(w, http.StatusInternalServerError, "encoding answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	writeBody(w, http.StatusOK, buf.Bytes())
}

// writeError answers status with a JSON body {"Error": msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	if r, ok := w.(*recorder); ok {
		r.err = msg
	}
	b, _ := json.Marshal(errorBody{Error: msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	writeBody(w, status, append(b, '\n'))
}

func writeText(w http.ResponseWriter, status int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	writeBody(w, status, []byte(s))
}

func writeBody(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
