package openai

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/llm"
)

// bodyTransport answers every request with the same 200 response, without a network.
type bodyTransport struct {
	body        []byte
	contentType string
}

func (t bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	ct := t.contentType
	if ct == "" {
		ct = "text/event-stream"
	}
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(t.body)), Request: r,
	}, nil
}

func offlineModel(tb testing.TB, body []byte, contentType string) *Model {
	m, err := New(Config{BaseURL: "http://model.test/v1", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bodyTransport{body, contentType}}})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// FuzzStream feeds arbitrary bytes to the adapter as a streamed reply. It must never panic,
// must follow the event protocol (Collect checks it), and a successful reply must be
// consistent: every tool call has an id and a name-or-arguments, the finish reason agrees
// with the content.
func FuzzStream(f *testing.F) {
	seeds := []string{
		strings.Join(okStep(chunk(dText("hi"), ""), chunk(`{}`, "stop")).pieces, ""),
		strings.Join(okStep(chunk(dReason("r"), ""), chunk(dTool(0, "a", "f", `{"x`), ""), chunk(dTool(1, "b", "g", ""), ""),
			chunk(dTool(0, "", "", `":1}`), ""), chunk(`{}`, "tool_calls"), usageChunk(3, 2, 1)).pieces, ""),
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":\"x\",\"function\":{\"arguments\":\"{}\"}}]},\"finish_reason\":\"length\"}]}\n\n",
		"data: {\"error\":{\"message\":\"no\"}}\n\n",
		"event: error\ndata: {}\n\n",
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\n",
		"data: [DONE]\n\n",
		": ping\r\n\r\ndata: {\"choices\":[]}\r\n\r\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}]}`), true)
	f.Fuzz(func(t *testing.T, body []byte, asJSON bool) {
		ct := ""
		if asJSON {
			ct = "application/json"
		}
		m := offlineModel(t, body, ct)
		resp, err := llm.Collect(m.Stream(context.Background(), userAsks("hi")))
		if err != nil {
			if llm.CodeOf(err) == "" {
				t.Fatalf("uncoded error %v", err)
			}
			if llm.CodeOf(err) == llm.CodeMalformedResponse && strings.Contains(err.Error(), "event protocol") {
				t.Fatalf("the adapter broke the event protocol: %v", err)
			}
			return
		}
		calls := 0
		for _, b := range resp.Message.Content {
			switch b.Type {
			case content.TypeToolCall:
				calls++
				if b.ID == "" {
					t.Fatalf("tool call without id: %+v", b)
				}
			case content.TypeText, content.TypeReasoning:
				if b.Text == "" {
					t.Fatalf("empty %s block", b.Type)
				}
			default:
				t.Fatalf("unexpected block %+v", b)
			}
		}
		switch resp.FinishReason {
		case llm.FinishToolCalls:
			if calls == 0 {
				t.Fatal("tool-calls finish without tool calls")
			}
		case llm.FinishStop:
			if calls > 0 {
				t.Fatal("stop finish with tool calls")
			}
			if len(resp.Message.Content) == 0 {
				t.Fatal("empty reply accepted")
			}
		case llm.FinishMaxTokens:
		default:
			t.Fatalf("finish reason %q", resp.FinishReason)
		}
	})
}

func TestCallKeys(t *testing.T) {
	ip := func(i int) *int { return &i }
	type delta struct {
		index *int
		id    string
	}
	tests := []struct {
		name   string
		deltas []delta
		want   []int
	}{
		{"by index", []delta{{ip(0), "a"}, {ip(1), "b"}, {ip(0), ""}, {ip(1), ""}, {ip(1), "b"}}, []int{0, 1, 0, 1, 1}},
		{"by id without index", []delta{{nil, "a"}, {nil, ""}, {nil, "b"}, {nil, "a"}, {nil, ""}}, []int{0, 0, 1, 0, 0}},
		{"all numbered 0", []delta{{ip(0), "a"}, {ip(0), ""}, {ip(0), "b"}, {ip(0), ""}}, []int{0, 0, 1, 1}},
		{"nothing at all", []delta{{nil, ""}, {nil, ""}}, []int{0, 0}},
		{"sparse indexes", []delta{{ip(5), ""}, {ip(2), ""}, {ip(5), "x"}}, []int{0, 1, 0}},
	}
	for _, tt := range tests {
		var c callKeys
		var got []int
		for _, d := range tt.deltas {
			got = append(got, c.key(d.index, d.id))
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: keys %v, want %v", tt.name, got, tt.want)
		}
	}
}
