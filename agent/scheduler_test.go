package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
	"pgregory.net/rapid"
)

// recorder is a Committer that records the event order.
type recorder struct {
	mu     sync.Mutex
	events []string
	seq    int64
	failOn string // fail CallStarted for this call id
}

func (r *recorder) CallStarted(c PlannedCall) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.ID == r.failOn {
		return 0, fmt.Errorf("log append failed for %s", c.ID)
	}
	r.events = append(r.events, "call:"+c.ID)
	r.seq++
	return r.seq - 1, nil
}

func (r *recorder) CallFinished(c PlannedCall, seq int64, res *tool.Result) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	status := "ok"
	if res.IsError {
		status = res.Error.Message
		if res.Error.Info != nil {
			status = res.Error.Info.Code
		}
	}
	r.events = append(r.events, fmt.Sprintf("result:%s:%s", c.ID, status))
	return nil
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

type waitArgs struct {
	ID string `json:"id"`
}

func waitRegistry(t *testing.T, g *gate) *tool.Registry {
	t.Helper()
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	body := func(ctx context.Context, call *tool.Call, in waitArgs) (string, error) {
		g.started <- in.ID
		select {
		case <-g.ch(in.ID):
			return "done " + in.ID, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	for _, d := range []*tool.Definition{
		tool.Must(tool.New("pwait", "parallel wait", body, tool.ConcurrencySafe())),
		tool.Must(tool.New("xwait", "exclusive wait", body)),
	} {
		if _, err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func calls(specs ...string) []PlannedCall {
	var out []PlannedCall
	for _, s := range specs {
		name, id, _ := strings.Cut(s, ":")
		out = append(out, PlannedCall{ID: id, Name: name, RawArgs: fmt.Sprintf(`{"id":%q}`, id)})
	}
	return out
}

func TestSchedulerRollingPoolOrder(t *testing.T) {
	g := newGate()
	reg := waitRegistry(t, g)
	s, err := NewScheduler(reg, 2)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	done := make(chan Batch)
	go func() {
		b, err := s.Run(context.Background(), nil, calls("pwait:c1", "pwait:c2", "pwait:c3", "pwait:c4"), rec)
		if err != nil {
			t.Error(err)
		}
		done <- b
	}()
	// c1 and c2 start; c2 finishing first must not commit before c1.
	testwait.Recv(t, g.started, "a value on g.started")
	testwait.Recv(t, g.started, "a value on g.started")
	g.release("c2")
	g.release("c1")
	testwait.Recv(t, g.started, "a value on g.started") // c3 starts once a slot frees
	testwait.Recv(t, g.started, "a value on g.started")
	g.release("c4")
	g.release("c3")
	testwait.Recv(t, done, "a value on done")
	got := rec.list()
	if got[0] != "call:c1" || got[1] != "call:c2" {
		t.Fatalf("first events = %v", got)
	}
	var results []string
	for _, e := range got {
		if strings.HasPrefix(e, "result:") {
			results = append(results, e)
		}
	}
	want := []string{"result:c1:ok", "result:c2:ok", "result:c3:ok", "result:c4:ok"}
	if !slices.Equal(results, want) {
		t.Fatalf("results = %v, want %v", results, want)
	}
}

func TestSchedulerExclusiveIsBarrier(t *testing.T) {
	g := newGate()
	reg := waitRegistry(t, g)
	s, _ := NewScheduler(reg, 10)
	rec := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := s.Run(context.Background(), nil, calls("pwait:a", "xwait:b", "pwait:c"), rec); err != nil {
			t.Error(err)
		}
	}()
	if id := testwait.Recv(t, g.started, "a value on g.started"); id != "a" {
		t.Fatalf("started %s first", id)
	}
	g.release("a")
	if id := testwait.Recv(t, g.started, "a value on g.started"); id != "b" {
		t.Fatalf("started %s second", id)
	}
	g.release("b")
	if id := testwait.Recv(t, g.started, "a value on g.started"); id != "c" {
		t.Fatalf("started %s third", id)
	}
	g.release("c")
	testwait.Recv(t, done, "a value on done")
	want := []string{"call:a", "result:a:ok", "call:b", "result:b:ok", "call:c", "result:c:ok"}
	if got := rec.list(); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

func TestSchedulerAbortSynthesizesUnstarted(t *testing.T) {
	g := newGate()
	reg := waitRegistry(t, g)
	s, _ := NewScheduler(reg, 1)
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Batch)
	go func() {
		b, err := s.Run(ctx, nil, calls("pwait:a", "pwait:b", "xwait:c"), rec)
		if err != nil {
			t.Error(err)
		}
		done <- b
	}()
	testwait.Recv(t, g.started, "a value on g.started")
	cancel()
	b := testwait.Recv(t, done, "a value on done")
	if !b.Aborted {
		t.Fatal("batch not reported aborted")
	}
	want := []string{"call:a", "result:a:context canceled", "call:b", "result:b:ABORTED_BEFORE_DISPATCH", "call:c", "result:c:ABORTED_BEFORE_DISPATCH"}
	if got := rec.list(); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

func TestSchedulerFailureDrains(t *testing.T) {
	g := newGate()
	reg := waitRegistry(t, g)
	s, _ := NewScheduler(reg, 4)
	rec := &recorder{failOn: "b"}
	done := make(chan error)
	go func() {
		_, err := s.Run(context.Background(), nil, calls("pwait:a", "pwait:b", "pwait:c"), rec)
		done <- err
	}()
	testwait.Recv(t, g.started, "a value on g.started")
	g.release("a")
	err := testwait.Recv(t, done, "a value on done")
	if err == nil || !strings.Contains(err.Error(), "log append failed for b") {
		t.Fatalf("err = %v", err)
	}
}

func TestNewSchedulerRejectsBadPool(t *testing.T) {
	reg, _ := tool.NewRegistry(tool.Config{})
	for _, n := range []int{0, -1} {
		if _, err := NewScheduler(reg, n); err == nil || err.Error() != "maxParallelToolCalls must be a positive integer" {
			t.Errorf("NewScheduler(%d) err = %v", n, err)
		}
	}
}

func TestSchedulerContextsAndConclusion(t *testing.T) {
	reg, _ := tool.NewRegistry(tool.Config{})
	note := tool.Must(tool.New("note", "defers a note",
		func(ctx context.Context, call *tool.Call, in waitArgs) (string, error) {
			call.DeferContext(content.Message{Content: content.Texts("note " + in.ID)})
			if in.ID == "end" {
				call.ConcludeTurn()
			}
			return in.ID, nil
		}, tool.ConcurrencySafe()))
	if _, err := reg.Register(note); err != nil {
		t.Fatal(err)
	}
	s, _ := NewScheduler(reg, 3)
	b, err := s.Run(context.Background(), nil, calls("note:x", "note:end", "note:y"), &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range b.Contexts {
		texts = append(texts, m.Content[0].Text)
	}
	if !slices.Equal(texts, []string{"note x", "note end", "note y"}) || !b.ConcludesTurn {
		t.Fatalf("contexts = %v, concludes = %v", texts, b.ConcludesTurn)
	}
}

// TestSchedulerProperties checks, for random mixes of parallel and exclusive calls and pool
// sizes, that results commit in model order, every call gets exactly one call and one result,
// exclusive calls never overlap anything, and the pool never exceeds its bound.
func TestSchedulerProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		pool := rapid.IntRange(1, 4).Draw(rt, "pool")
		n := rapid.IntRange(0, 12).Draw(rt, "n")
		var active, maxActive, exclusiveActive atomic.Int32
		var overlapErr atomic.Value
		reg, _ := tool.NewRegistry(tool.Config{})
		body := func(excl bool) tool.Func[waitArgs, string] {
			return func(ctx context.Context, call *tool.Call, in waitArgs) (string, error) {
				a := active.Add(1)
				defer active.Add(-1)
				for {
					m := maxActive.Load()
					if a <= m || maxActive.CompareAndSwap(m, a) {
						break
					}
				}
				if excl {
					exclusiveActive.Add(1)
					defer exclusiveActive.Add(-1)
					if a != 1 {
						overlapErr.Store(fmt.Sprintf("exclusive %s overlapped %d calls", in.ID, a-1))
					}
				} else if exclusiveActive.Load() > 0 {
					overlapErr.Store("parallel call overlapped an exclusive call")
				}
				for range 100 {
					_ = jsonv.KindOf(nil)
				}
				return in.ID, nil
			}
		}
		reg.Register(tool.Must(tool.New("p", "", body(false), tool.ConcurrencySafe())))
		reg.Register(tool.Must(tool.New("x", "", body(true))))
		var specs []string
		for i := range n {
			name := rapid.SampledFrom([]string{"p", "x"}).Draw(rt, "kind")
			specs = append(specs, fmt.Sprintf("%s:c%d", name, i))
		}
		s, _ := NewScheduler(reg, pool)
		rec := &recorder{}
		if _, err := s.Run(context.Background(), nil, calls(specs...), rec); err != nil {
			rt.Fatal(err)
		}
		if v := overlapErr.Load(); v != nil {
			rt.Fatal(v)
		}
		if int(maxActive.Load()) > pool {
			rt.Fatalf("%d calls ran at once with a pool of %d", maxActive.Load(), pool)
		}
		var results []string
		calls := map[string]int{}
		for _, e := range rec.list() {
			if id, ok := strings.CutPrefix(e, "call:"); ok {
				calls[id]++
			}
			if rest, ok := strings.CutPrefix(e, "result:"); ok {
				id, _, _ := strings.Cut(rest, ":")
				results = append(results, id)
			}
		}
		for i := range n {
			id := fmt.Sprintf("c%d", i)
			if calls[id] != 1 {
				rt.Fatalf("call %s recorded %d times", id, calls[id])
			}
			if i >= len(results) || results[i] != id {
				rt.Fatalf("results out of model order: %v", results)
			}
		}
	})
}

// TestSchedulerReclassifiesBeforeStart: a later call is classified immediately before it
// starts, so a registry change made by an earlier call of the same batch turns it into a
// barrier (docs/behaviour.md §8.2). c0 holds a pool slot while c1 makes "later" exclusive; c2 ("later")
// then waits for the pool to drain instead of overlapping c0.
func TestSchedulerReclassifiesBeforeStart(t *testing.T) {
	g := newGate()
	reg := waitRegistry(t, g)
	var exclusive atomic.Bool
	var c0Done atomic.Bool
	flipped := make(chan struct{})
	reg.Register(tool.Must(tool.New("flip", "", func(ctx context.Context, call *tool.Call, in waitArgs) (string, error) {
		exclusive.Store(true)
		close(flipped)
		return "flipped", nil
	}, tool.ConcurrencySafe())))
	overlapped := make(chan bool, 1)
	reg.Register(tool.Must(tool.New("later", "", func(ctx context.Context, call *tool.Call, in waitArgs) (string, error) {
		overlapped <- !c0Done.Load()
		return "later", nil
	}, tool.ConcurrencySafeIf(func(waitArgs) bool { return !exclusive.Load() }))))
	reg.OnResult(func(ctx context.Context, exec *tool.Execution, res *tool.Result) error {
		if exec.CallID() == "c0" {
			c0Done.Store(true)
		}
		return nil
	})
	s, _ := NewScheduler(reg, 2)
	rec := &recorder{}
	done := make(chan error)
	go func() {
		_, err := s.Run(context.Background(), nil, calls("pwait:c0", "flip:c1", "later:c2", "pwait:c3"), rec)
		done <- err
	}()
	testwait.Recv(t, g.started, "a value on g.started") // c0 holds its slot
	testwait.Recv(t, flipped, "a value on flipped")     // c1 ran and made "later" exclusive while c0 still runs
	g.release("c0")
	if <-overlapped {
		t.Fatal("c2 started while c0 was running, after it had become exclusive")
	}
	testwait.Recv(t, g.started, "a value on g.started")
	g.release("c3")
	if err := testwait.Recv(t, done, "a value on done"); err != nil {
		t.Fatal(err)
	}
	want := []string{"call:c0", "call:c1", "result:c0:ok", "result:c1:ok", "call:c2", "result:c2:ok", "call:c3", "result:c3:ok"}
	if got := rec.list(); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}
