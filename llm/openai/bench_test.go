package openai

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/llm"
)

// benchBody is a realistic long reply: reasoning, text and two tool calls whose arguments
// arrive a few bytes per chunk, about 2,000 chunks in all.
func benchBody() []byte {
	var payloads []string
	for range 500 {
		payloads = append(payloads, chunk(dReason("think "), ""))
	}
	for range 500 {
		payloads = append(payloads, chunk(dText("word "), ""))
	}
	payloads = append(payloads, chunk(dTool(0, "call_a", "write_file", ""), ""), chunk(dTool(1, "call_b", "bash", ""), ""))
	for range 500 {
		payloads = append(payloads, chunk(dTool(0, "", "", `"abc`), ""), chunk(dTool(1, "", "", `xyz"`), ""))
	}
	payloads = append(payloads, chunk(`{}`, "tool_calls"), usageChunk(5000, 2000, 4000))
	return []byte(strings.Join(okStep(payloads...).pieces, ""))
}

// BenchmarkStreamAssembly measures decoding and assembling a streamed reply (no network:
// the body comes from an in-memory transport).
func BenchmarkStreamAssembly(b *testing.B) {
	body := benchBody()
	m := offlineModel(b, body, "")
	req := userAsks("go")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		resp, err := llm.Collect(m.Stream(context.Background(), req))
		if err != nil || len(resp.ToolCalls()) != 2 {
			b.Fatal(resp, err)
		}
	}
}

// BenchmarkSSEReader measures the event-stream framing alone.
func BenchmarkSSEReader(b *testing.B) {
	body := benchBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		s := newSSEReader(bytes.NewReader(body))
		for {
			if _, _, err := s.next(); err != nil {
				break
			}
		}
	}
}
