// Package otlptest is a local stand-in for an OpenTelemetry collector, for tests: it
// accepts OTLP trace exports over HTTP/protobuf and gRPC, decodes them and keeps their
// spans, so a test can check what a program actually sent.
package otlptest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened: its identity, its attributes as strings and its
// resource's attributes.
type Span struct {
	Name                      string
	TraceID, SpanID, ParentID string // hex; ParentID "" for a root
	Attributes, Resource      map[string]string
	StatusCode                int32 // 0 unset, 1 ok, 2 error
	Events                    []string
}

// Collector receives trace exports. Its zero value is not usable; create one with New.
type Collector struct {
	coltrace.UnimplementedTraceServiceServer

	mu      sync.Mutex
	spans   []Span
	headers []map[string]string // per export: the request headers (lower-case names)
	changed chan struct{}       // closed and replaced whenever spans arrive
}

// New returns an empty collector.
func New() *Collector { return &Collector{changed: make(chan struct{})} }

// ServeHTTP accepts POST /v1/traces with an application/x-protobuf
// ExportTraceServiceRequest, as the OTLP/HTTP exporter sends it (gzip or not).
func (c *Collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.Error(w, fmt.Sprintf("otlptest: %s %s: only POST /v1/traces is served", r.Method, r.URL.Path), http.StatusNotFound)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, fmt.Sprintf("otlptest: content type %q, want application/x-protobuf", ct), http.StatusUnsupportedMediaType)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, "otlptest: gzip body: "+err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, "otlptest: read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, "otlptest: decode ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	h := map[string]string{}
	for k := range r.Header {
		h[strings.ToLower(k)] = r.Header.Get(k)
	}
	c.add(&req, h)
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Export implements the gRPC trace service.
func (c *Collector) Export(ctx context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	h := map[string]string{}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		for k, v := range md {
			h[k] = strings.Join(v, ",")
		}
	}
	c.add(req, h)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

func (c *Collector) add(req *coltrace.ExportTraceServiceRequest, headers map[string]string) {
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{
					Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Attributes: attrs(s.GetAttributes()), Resource: res,
					StatusCode: int32(s.GetStatus().GetCode()),
				}
				for _, e := range s.GetEvents() {
					sp.Events = append(sp.Events, e.GetName())
				}
				got = append(got, sp)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spans = append(c.spans, got...)
	c.headers = append(c.headers, headers)
	close(c.changed)
	c.changed = make(chan struct{})
}

// attrs flattens OTLP attributes to strings (arrays as their JSON-like rendering).
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		parts := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, value(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return fmt.Sprint(v)
}

// Spans returns the spans received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Headers returns the headers (HTTP) or metadata (gRPC) of each export received so far.
func (c *Collector) Headers() []map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]map[string]string(nil), c.headers...)
}

// Wait returns the spans once at least n have arrived, or ctx's error naming how many did.
func (c *Collector) Wait(ctx context.Context, n int) ([]Span, error) {
	for {
		c.mu.Lock()
		spans, changed := append([]Span(nil), c.spans...), c.changed
		c.mu.Unlock()
		if len(spans) >= n {
			return spans, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return spans, fmt.Errorf("otlptest: %d of %d spans arrived: %w", len(spans), n, ctx.Err())
		}
	}
}
