package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/llm"
)

// step is one scripted HTTP response of the fake server.
type step struct {
	status int               // default 200
	header map[string]string // default Content-Type: text/event-stream
	pieces []string          // body, flushed piece by piece
	drop   bool              // after the pieces, cut the connection mid-body
	stall  bool              // after the pieces, send nothing until the client gives up
	hold   bool              // send nothing at all, not even headers, until the client gives up
}

// fakeServer is a local OpenAI-compatible endpoint that answers requests with scripted
// steps and records what it received.
type fakeServer struct {
	t     testing.TB
	srv   *httptest.Server
	mu    sync.Mutex
	steps []step
	reqs  []recorded
}

type recorded struct {
	path   string
	header http.Header
	body   []byte
}

func newFakeServer(t testing.TB, steps ...step) *fakeServer {
	f := &fakeServer{t: t, steps: steps}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{path: r.URL.Path, header: r.Header.Clone(), body: body})
	if len(f.steps) == 0 {
		f.mu.Unlock()
		f.t.Errorf("unexpected request %d to the fake server", len(f.reqs))
		http.Error(w, `{"error":{"message":"no scripted response left"}}`, http.StatusTeapot)
		return
	}
	s := f.steps[0]
	f.steps = f.steps[1:]
	f.mu.Unlock()

	if s.hold {
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for k, v := range s.header {
		w.Header().Set(k, v)
	}
	if s.status == 0 {
		s.status = http.StatusOK
	}
	w.WriteHeader(s.status)
	flusher := w.(http.Flusher)
	flusher.Flush()
	for _, p := range s.pieces {
		if _, err := io.WriteString(w, p); err != nil {
			return
		}
		flusher.Flush()
	}
	if s.stall {
		<-r.Context().Done()
		return
	}
	if s.drop {
		panic(http.ErrAbortHandler) // closes the connection without ending the chunked body
	}
}

// requests returns what the server received so far.
func (f *fakeServer) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// model returns a Model for the fake server; waits records retry delays instead of sleeping.
func (f *fakeServer) model(t testing.TB, cfg Config) (*Model, *[]time.Duration) {
	t.Helper()
	cfg.BaseURL = f.srv.URL + "/v1"
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = f.srv.Client()
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	waits := new([]time.Duration)
	m.sleep = func(done <-chan struct{}, d time.Duration) bool {
		mu.Lock()
		*waits = append(*waits, d)
		mu.Unlock()
		select {
		case <-done:
			return false
		default:
			return true
		}
	}
	return m, waits
}

// --- SSE payload builders, shaped like DeepSeek's chunks ---

func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// chunk is one chat.completion.chunk with the given delta object and finish reason.
func chunk(delta, finish string) string {
	fr := "null"
	if finish != "" {
		fr = q(finish)
	}
	return fmt.Sprintf(`{"id":"c-1","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-chat",`+
		`"system_fingerprint":"fp_1","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]}`, delta, fr)
}

func dText(s string) string   { return fmt.Sprintf(`{"content":%s}`, q(s)) }
func dReason(s string) string { return fmt.Sprintf(`{"content":null,"reasoning_content":%s}`, q(s)) }

// dTool is a tool-call delta; id and name are left out when empty, as in later deltas.
func dTool(index int, id, name, args string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `{"tool_calls":[{"index":%d`, index)
	if id != "" {
		fmt.Fprintf(&sb, `,"id":%s,"type":"function"`, q(id))
	}
	sb.WriteString(`,"function":{`)
	if name != "" {
		fmt.Fprintf(&sb, `"name":%s,`, q(name))
	}
	fmt.Fprintf(&sb, `"arguments":%s}}]}`, q(args))
	return sb.String()
}

func usageChunk(prompt, completion, cacheHit int) string {
	return fmt.Sprintf(`{"id":"c-1","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-chat",`+
		`"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,`+
		`"prompt_cache_hit_tokens":%d,"prompt_cache_miss_tokens":%d}}`,
		prompt, completion, prompt+completion, cacheHit, prompt-cacheHit)
}

// sse frames payloads as server-sent events.
func sse(payloads ...string) []string {
	out := make([]string, len(payloads))
	for i, p := range payloads {
		out[i] = "data: " + p + "\n\n"
	}
	return out
}

// okStep is a complete successful stream of the given chunk payloads.
func okStep(payloads ...string) step {
	return step{pieces: sse(append(payloads, "[DONE]")...)}
}

// simpleReply is a short complete text reply.
func simpleReply(text string) step {
	return okStep(chunk(`{"role":"assistant","content":""}`, ""), chunk(dText(text), ""), chunk(`{}`, "stop"), usageChunk(5, 1, 0))
}

// errStep is an HTTP error response with a JSON error body.
func errStep(status int, body string, header map[string]string) step {
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range header {
		h[k] = v
	}
	return step{status: status, header: h, pieces: []string{body}}
}

// collectEvents drains a stream, returning its events and error.
func collectEvents(ctx context.Context, m llm.Model, req llm.Request) ([]llm.Event, error) {
	var evs []llm.Event
	for ev, err := range m.Stream(ctx, req) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}
