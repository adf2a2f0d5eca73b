package otlptest

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func export(t *testing.T) []byte {
	t.Helper()
	b, err := proto.Marshal(&coltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			Name: "s", TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8),
			Attributes: []*commonpb.KeyValue{
				{Key: "n", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 3}}},
				{Key: "a", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{
					{Value: &commonpb.AnyValue_StringValue{StringValue: "x"}}, {Value: &commonpb.AnyValue_BoolValue{BoolValue: true}},
				}}}}},
			},
		}}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCollectorHTTP: exports are decoded, plain or gzipped; anything else is refused with
// a status that says why and keeps nothing.
func TestCollectorHTTP(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(export(t))
	zw.Close()
	cases := []struct {
		name, method, path, ctype, enc string
		body                           []byte
		status, spans                  int
	}{
		{"plain", "POST", "/v1/traces", "application/x-protobuf", "", export(t), 200, 1},
		{"gzip", "POST", "/v1/traces", "application/x-protobuf", "gzip", gz.Bytes(), 200, 1},
		{"wrong path", "POST", "/v1/metrics", "application/x-protobuf", "", export(t), 404, 0},
		{"wrong method", "GET", "/v1/traces", "application/x-protobuf", "", nil, 404, 0},
		{"json", "POST", "/v1/traces", "application/json", "", []byte("{}"), 415, 0},
		{"bad gzip", "POST", "/v1/traces", "application/x-protobuf", "gzip", []byte("not gzip"), 400, 0},
		{"bad protobuf", "POST", "/v1/traces", "application/x-protobuf", "", []byte{0xff, 0xff, 0xff}, 400, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			srv := httptest.NewServer(c)
			defer srv.Close()
			req, _ := http.NewRequestWithContext(t.Context(), tc.method, srv.URL+tc.path, bytes.NewReader(tc.body))
			req.Header.Set("Content-Type", tc.ctype)
			if tc.enc != "" {
				req.Header.Set("Content-Encoding", tc.enc)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status || len(c.Spans()) != tc.spans {
				t.Fatalf("status %d with %d spans, want %d with %d", resp.StatusCode, len(c.Spans()), tc.status, tc.spans)
			}
			if tc.spans == 0 {
				return
			}
			s := c.Spans()[0]
			if s.Name != "s" || s.TraceID != strings.Repeat("01", 16) || s.SpanID != strings.Repeat("02", 8) || s.ParentID != "" ||
				s.Attributes["n"] != "3" || s.Attributes["a"] != "[x,true]" {
				t.Errorf("decoded %+v", s)
			}
			if c.Headers()[0]["content-type"] != "application/x-protobuf" {
				t.Errorf("headers %v", c.Headers()[0])
			}
		})
	}
}

// TestCollectorWait: Wait returns once enough spans arrived, and otherwise fails with its
// context, saying how many did.
func TestCollectorWait(t *testing.T) {
	c := New()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Wait(ctx, 1); err == nil || !strings.Contains(err.Error(), "0 of 1 spans arrived") {
		t.Errorf("Wait on a cancelled context: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Wait(t.Context(), 1)
		done <- err
	}()
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(export(t), &req); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Export(t.Context(), &req); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("Wait after an export: %v", err)
	}
}
