// Package fakeapi is an HTTP test server for the providers' tests: it records every
// request (method, path, headers, body) and answers from a list of canned responses.
// It also holds the checks and requests every provider's tests share, so that a
// behaviour the providers promise alike is tested the same way for each.
package fakeapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Response is one canned answer.
type Response struct {
	Status  int
	Header  map[string]string
	Body    string
	Handler http.HandlerFunc // when set, answers instead of the fields above
}

// Request is one recorded request.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic value.
func (r Request) JSON(t testing.TB) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, r.Body)
	}
	return v
}

// AssertJSON compares the body of r with the expected JSON, as values.
func AssertJSON(t testing.TB, r Request, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expected JSON: %v", err)
	}
	if diff := cmp.Diff(w, r.JSON(t)); diff != "" {
		t.Errorf("request body mismatch (-want +got):\n%s\nbody: %s", diff, r.Body)
	}
}

// Context is a context that ends after 5 seconds or when the test ends.
func Context(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

// Server answers the i-th request with responses[i], and every request after the last
// with the last response.
type Server struct {
	*httptest.Server

	mu        sync.Mutex
	responses []Response
	requests  []Request
}

// New starts a server; it is closed when the test ends.
func New(t testing.TB, responses ...Response) *Server {
	t.Helper()
	if len(responses) == 0 {
		t.Fatal("fakeapi.New: no responses")
	}
	s := &Server{responses: responses}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	i := min(len(s.requests), len(s.responses)) - 1
	resp := s.responses[i]
	s.mu.Unlock()
	if resp.Handler != nil {
		resp.Handler(w, r)
		return
	}
	if _, ok := resp.Header["Content-Type"]; !ok {
		w.Header().Set("Content-Type", "application/json")
	}
	for k, v := range resp.Header {
		w.Header().Set(k, v)
	}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, resp.Body)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}
