package durable_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/durable"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

type echoIn struct {
	Text string `json:"text"`
}

type echoOut struct {
	Text string `json:"text"`
}

type touchIn struct {
	Name string `json:"name"`
}

// fixture is a host with real tools, a real session store and a scripted model.
type fixture struct {
	host  *durable.Host
	store session.Store
	dir   string // the workspace
	// results is the host's result store, where a tool activity records its result last.
	results string
	reg     *tool.Registry
	model   llm.Model

	mu      sync.Mutex
	runs    map[string]int // body runs per tool name
	started chan string    // the gate tool's body started (its text)
	release chan struct{}  // closes to let gate bodies return
	gateEnd chan struct{}  // a gate body returned
}

func newFixture(t testing.TB, replies []script.Reply, cfg func(*durable.HostConfig)) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), runs: map[string]int{}, started: make(chan string, 16), release: make(chan struct{}), gateEnd: make(chan struct{}, 16)}
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f.reg = reg
	count := func(name string) {
		f.mu.Lock()
		f.runs[name]++
		f.mu.Unlock()
	}
	echo, err := tool.New("echo", "Echo text.", func(ctx context.Context, c *tool.Call, in echoIn) (echoOut, error) {
		count("echo")
		return echoOut{Text: in.Text}, nil
	}, tool.ConcurrencySafe())
	if err != nil {
		t.Fatal(err)
	}
	touch, err := tool.New("touch", "Create a file in the workspace.", func(ctx context.Context, c *tool.Call, in touchIn) (echoOut, error) {
		count("touch")
		return echoOut{Text: "created " + in.Name}, os.WriteFile(filepath.Join(f.dir, in.Name), nil, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	gate, err := tool.New("gate", "Wait for the test.", func(ctx context.Context, c *tool.Call, in echoIn) (echoOut, error) {
		count("gate")
		defer func() { f.gateEnd <- struct{}{} }()
		f.started <- in.Text
		select {
		case <-f.release:
			return echoOut{Text: in.Text}, nil
		case <-ctx.Done():
			return echoOut{Text: "stopped"}, nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	big, err := tool.New("big", "Return a large text.", func(ctx context.Context, c *tool.Call, in echoIn) (echoOut, error) {
		count("big")
		return echoOut{Text: strings.Repeat(in.Text, 4096)}, nil
	}, tool.ConcurrencySafe())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []*tool.Definition{echo, touch, gate, big} {
		if _, err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	// touch asks for approval: the decision depends on the call only.
	reg.Global().OnPreExecute(func(ctx context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		if exec.Name() == "touch" {
			return tool.Ask("touch writes to the workspace"), nil
		}
		return next()
	})
	f.store, err = session.Open(filepath.Join(t.TempDir(), "sessions"), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	model, err := script.New(replies, script.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.results = filepath.Join(t.TempDir(), "results")
	hc := durable.HostConfig{Registry: reg, Store: f.store, Results: f.results, Model: model, System: "test"}
	if cfg != nil {
		cfg(&hc)
	}
	f.model, f.store = hc.Model, hc.Store
	f.host, err = durable.NewHost(hc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.host.Close(); err != nil {
			t.Error(err)
		}
	})
	return f
}

func (f *fixture) bodyRuns(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs[name]
}

// events loads a session's log from the store.
func (f *fixture) events(t *testing.T, id string) []session.Event {
	t.Helper()
	if err := f.host.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := f.store.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return l.Events
}

// callResults pairs every tool/call of a log with its tool/results and checks the log's
// guarantees: each call has exactly one result, citing it, and results commit in call order.
func callResults(t *testing.T, events []session.Event) (order []string, results map[string]session.ToolResult) {
	t.Helper()
	results = map[string]session.ToolResult{}
	callSeq := map[string]int64{}
	for _, e := range events {
		switch e.Type {
		case session.TypeToolCall:
			c, err := session.DecodeToolCall(e)
			if err != nil {
				t.Fatal(err)
			}
			callSeq[c.CallID] = e.Seq
			order = append(order, c.CallID)
		case session.TypeToolResult:
			r, err := session.DecodeToolResult(e)
			if err != nil {
				t.Fatal(err)
			}
			if _, dup := results[r.CallID]; dup {
				t.Fatalf("call %q has two tool/results", r.CallID)
			}
			if len(r.SourceEventSeqs) != 1 || r.SourceEventSeqs[0] != callSeq[r.CallID] {
				t.Fatalf("tool/result of %q cites %v, want [%d]", r.CallID, r.SourceEventSeqs, callSeq[r.CallID])
			}
			results[r.CallID] = r
		}
	}
	for _, id := range order {
		if _, ok := results[id]; !ok {
			t.Fatalf("call %q has no tool/result", id)
		}
	}
	// Results commit in model order.
	var got []string
	for _, e := range events {
		if e.Type == session.TypeToolResult {
			r, _ := session.DecodeToolResult(e)
			got = append(got, r.CallID)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(order) {
		t.Fatalf("results committed in order %v, calls were %v", got, order)
	}
	return order, results
}

func types(events []session.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

func text(r session.ToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func testNow() time.Time { return time.Now() }
