// Package otlptest is a real OTLP/HTTP trace receiver for tests: an httptest server
// that takes POST /v1/traces (or another path), decodes the protobuf body and keeps
// the spans, their resources and the request headers.
package otlptest

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened.
type Span struct {
	Name         string
	TraceID      string
	SpanID       string
	ParentSpanID string
	// Attrs are the span's attributes as strings (a bool as true/false, an int in
	// decimal); Resource the attributes of its resource.
	Attrs    map[string]string
	Resource map[string]string
	// Scope is the instrumentation scope's name.
	Scope string
	// Events are the names of the span's events, in order.
	Events []string
}

// Request is one export request the receiver answered.
type Request struct {
	Path   string
	Header http.Header
}

// Receiver is the server. Its URL is the base URL (http://127.0.0.1:port).
type Receiver struct {
	*httptest.Server
	path string

	mu       sync.Mutex
	spans    []Span
	requests []Request
	errs     []string
}

// New starts a receiver that takes exports at path (e.g. /v1/traces) and answers
// 404 elsewhere. Close it when done.
func New(path string) *Receiver {
	r := &Receiver{path: path}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.URL.Path != r.path || req.Method != http.MethodPost {
		r.errs = append(r.errs, req.Method+" "+req.URL.Path)
		http.NotFound(w, req)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		r.errs = append(r.errs, "content type "+ct)
		http.Error(w, "want application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(req.Body)
	var msg coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &msg)
	}
	if err != nil {
		r.errs = append(r.errs, "body: "+err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.requests = append(r.requests, Request{Path: req.URL.Path, Header: req.Header.Clone()})
	for _, rs := range msg.ResourceSpans {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := Span{
					Name: s.Name, TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
					ParentSpanID: hex.EncodeToString(s.ParentSpanId), Attrs: attrs(s.Attributes), Resource: res,
					Scope: ss.GetScope().GetName(),
				}
				for _, e := range s.Events {
					sp.Events = append(sp.Events, e.Name)
				}
				r.spans = append(r.spans, sp)
			}
		}
	}
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = x.StringValue
		case *commonpb.AnyValue_BoolValue:
			if x.BoolValue {
				m[kv.Key] = "true"
			} else {
				m[kv.Key] = "false"
			}
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = strconv.FormatInt(x.IntValue, 10)
		default:
			m[kv.Key] = v.String()
		}
	}
	return m
}

// Spans returns the spans received so far, in the order they came.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Names returns the received spans' names, sorted.
func (r *Receiver) Names() []string {
	var names []string
	for _, s := range r.Spans() {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return names
}

// Requests returns the export requests answered so far.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// Errors returns what the receiver refused (a wrong path, method, content type or
// body).
func (r *Receiver) Errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}
