package agent

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// sleepRegistry has "nap", a concurrency-safe tool that waits 1 ms.
func sleepRegistry(b *testing.B) *tool.Registry {
	b.Helper()
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		b.Fatal(err)
	}
	nap := func(ctx context.Context, call *tool.Call, in textArgs) (string, error) {
		t := time.NewTimer(time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return in.Text, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if _, err := reg.Register(tool.Must(tool.New("nap", "Wait 1 ms.", nap, tool.ConcurrencySafe()))); err != nil {
		b.Fatal(err)
	}
	return reg
}

// orderCommitter checks that results commit in model order.
type orderCommitter struct {
	b    *testing.B
	seq  int64
	next int
}

func (c *orderCommitter) CallStarted(PlannedCall) (int64, error) { c.seq++; return c.seq, nil }

func (c *orderCommitter) CallFinished(pc PlannedCall, _ int64, res *tool.Result) error {
	if want := fmt.Sprintf("n%d", c.next); pc.ID != want || res.IsError {
		c.b.Fatalf("result %s (error %v) committed where %s belongs", pc.ID, res.IsError, want)
	}
	c.next++
	return nil
}

// BenchmarkScheduler1000Naps runs 1,000 concurrency-safe calls that each wait 1 ms with a
// pool of 10 (DESIGN §5: about 100 ms, results in model order).
func BenchmarkScheduler1000Naps(b *testing.B) {
	reg := sleepRegistry(b)
	s, err := NewScheduler(reg, 10)
	if err != nil {
		b.Fatal(err)
	}
	calls := make([]PlannedCall, 1000)
	for i := range calls {
		calls[i] = PlannedCall{ID: fmt.Sprintf("n%d", i), Name: "nap", RawArgs: `{"text":"z"}`}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Run(context.Background(), nil, calls, &orderCommitter{b: b}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGoroutineFloor1000Naps is the floor of BenchmarkScheduler1000Naps: the same
// 1,000 waits of 1 ms on bare goroutines, at most 10 at a time, results stored in order;
// no registry, pipeline or log.
func BenchmarkGoroutineFloor1000Naps(b *testing.B) {
	ctx := context.Background()
	results := make([]string, 1000)
	b.ReportAllocs()
	for b.Loop() {
		sem := make(chan struct{}, 10)
		var wg sync.WaitGroup
		for i := range results {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				t := time.NewTimer(time.Millisecond)
				defer t.Stop()
				select {
				case <-t.C:
					results[i] = "z"
				case <-ctx.Done():
				}
			}()
		}
		wg.Wait()
	}
}

// BenchmarkTurn1000Naps is the same batch through the whole loop: a scripted reply asking for
// 1,000 calls, each logged (tool/call durable, tool/result) in an in-memory session log,
// then the final answer.
func BenchmarkTurn1000Naps(b *testing.B) {
	reg := sleepRegistry(b)
	calls := make([]script.ToolCall, 1000)
	for i := range calls {
		calls[i] = script.ToolCall{ID: fmt.Sprintf("n%d", i), Name: "nap", Arguments: `{"text":"z"}`}
	}
	b.ReportAllocs()
	for b.Loop() {
		m, err := script.New([]script.Reply{{ToolCalls: calls}, {Text: "rested"}}, script.Options{})
		if err != nil {
			b.Fatal(err)
		}
		a, err := New(Config{Registry: reg, Model: m, Log: session.NewMemory(nil)})
		if err != nil {
			b.Fatal(err)
		}
		if res, err := a.Run(context.Background(), "rest"); err != nil || res.Text() != "rested" {
			b.Fatalf("turn: %v, %+v", err, res)
		}
		a.Close()
	}
}

// BenchmarkTextTurn measures the loop's own cost for a turn without tools.
func BenchmarkTextTurn(b *testing.B) {
	reg := sleepRegistry(b)
	replies := make([]script.Reply, 0, 1)
	replies = append(replies, script.Reply{Text: "hi"})
	b.ReportAllocs()
	for b.Loop() {
		m, err := script.New(replies, script.Options{})
		if err != nil {
			b.Fatal(err)
		}
		a, err := New(Config{Registry: reg, Model: m})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := a.Run(context.Background(), "hello"); err != nil {
			b.Fatal(err)
		}
		a.Close()
	}
}
