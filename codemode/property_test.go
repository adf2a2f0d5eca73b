package codemode_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// poolTrace records what the tools of a run saw, in one total order.
type poolTrace struct {
	mu     sync.Mutex
	events []poolEvent
	live   int
	peak   int
	excl   bool // an exclusive body is running
	broken []string
}

type poolEvent struct {
	kind string // prepare (pre-execute), start and end (the body), commit (the result)
	n    int
}

func subNumber(id string) int {
	i := strings.LastIndex(id, ":")
	n, _ := strconv.Atoi(id[i+1:])
	return n
}

func (p *poolTrace) body(call *tool.Call, exclusive bool, pause time.Duration) {
	n := subNumber(call.CallID())
	p.mu.Lock()
	p.events = append(p.events, poolEvent{"start", n})
	p.live++
	p.peak = max(p.peak, p.live)
	if p.excl || (exclusive && p.live > 1) {
		p.broken = append(p.broken, fmt.Sprintf("call %d started beside an exclusive call", n))
	}
	p.excl = p.excl || exclusive
	p.mu.Unlock()
	time.Sleep(pause)
	p.mu.Lock()
	p.live--
	if exclusive {
		p.excl = false
	}
	p.events = append(p.events, poolEvent{"end", n})
	p.mu.Unlock()
}

// TestPoolProperties checks the per-run scheduler against random mixes of concurrency-safe
// and exclusive calls submitted concurrently: starts (pre-execute) and commits follow
// submission order,
// at most MaxParallelSubCalls bodies overlap, an exclusive call runs alone and is a full
// barrier (every earlier call committed before it starts, every later call starts after
// it committed), and every started call has exactly one start and one settle event.
func TestPoolProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 10).Draw(rt, "calls")
		maxPar := rapid.IntRange(1, 4).Draw(rt, "maxParallel")
		safe := rapid.SliceOfN(rapid.Bool(), n, n).Draw(rt, "safe")
		pauses := rapid.SliceOfN(rapid.IntRange(0, 300), n, n).Draw(rt, "pauseMicros")

		reg, err := tool.NewRegistry(tool.Config{Mode: tool.ModeCode})
		if err != nil {
			rt.Fatal(err)
		}
		trace := &poolTrace{}
		type in struct {
			Pause int `json:"pause"`
		}
		for _, name := range []string{"safe", "excl"} {
			exclusive := name == "excl"
			var opts []tool.Option
			if !exclusive {
				opts = append(opts, tool.ConcurrencySafe())
			}
			def, err := tool.New(name, "Pool probe.", func(_ context.Context, call *tool.Call, a in) (string, error) {
				trace.body(call, exclusive, time.Duration(a.Pause)*time.Microsecond)
				return call.CallID(), nil
			}, opts...)
			if err != nil {
				rt.Fatal(err)
			}
			if _, err := reg.Register(def); err != nil {
				rt.Fatal(err)
			}
		}
		reg.OnPreExecute(func(_ context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
			if exec.Parent() != nil {
				trace.mu.Lock()
				trace.events = append(trace.events, poolEvent{"prepare", subNumber(exec.CallID())})
				trace.mu.Unlock()
			}
			return next()
		})
		reg.OnResult(func(_ context.Context, exec *tool.Execution, _ *tool.Result) error {
			if exec.Parent() != nil {
				trace.mu.Lock()
				trace.events = append(trace.events, poolEvent{"commit", subNumber(exec.CallID())})
				trace.mu.Unlock()
			}
			return nil
		})
		log := &recLog{}
		runtime := &fakeRuntime{}
		if _, err := codemode.Install(reg, runtime, codemode.Config{MaxParallelSubCalls: maxPar, Log: log}); err != nil {
			rt.Fatal(err)
		}
		agent := reg.NewScope("agent", nil)
		// Which tool each sub-call number used is known only after submission: the
		// submission order of concurrent calls is the order the lane numbered them.
		var kindsMu sync.Mutex
		kinds := map[string]bool{}
		runtime.setProgram(func(p *program) (coderuntime.Result, error) {
			var calls []*pending
			for i := range n {
				name := "excl"
				if safe[i] {
					name = "safe"
				}
				calls = append(calls, p.spawn(name, jsonv.NewObject(jsonv.Member{Name: "pause", Value: float64(pauses[i])})))
			}
			for i, c := range calls {
				v, err := c.wait()
				if err != nil {
					return coderuntime.Result{}, err
				}
				kindsMu.Lock()
				kinds[v.(string)] = safe[i]
				kindsMu.Unlock()
			}
			return ok(nil)
		})
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: tool.RunCodeName, Agent: agent,
			Args: jsonv.NewObject(jsonv.Member{Name: "code", Value: "p"}, jsonv.Member{Name: "description", Value: "pool probe"})})
		if res.IsError {
			rt.Fatalf("run failed: %s", res.Error.Message)
		}
		if len(trace.broken) > 0 {
			rt.Fatal(trace.broken)
		}
		if trace.peak > maxPar {
			rt.Fatalf("peak %d > %d", trace.peak, maxPar)
		}
		isSafe := func(m int) bool { return kinds["c:code:"+strconv.Itoa(m)] }
		pos := map[string]int{}
		var starts, commits []int
		for i, ev := range trace.events {
			pos[ev.kind+strconv.Itoa(ev.n)] = i
			switch ev.kind {
			case "prepare":
				starts = append(starts, ev.n)
			case "commit":
				commits = append(commits, ev.n)
			}
		}
		want := make([]int, n)
		for i := range want {
			want[i] = i + 1
		}
		if !slices.Equal(starts, want) || !slices.Equal(commits, want) {
			rt.Fatalf("starts %v commits %v", starts, commits)
		}
		for m := 1; m <= n; m++ {
			if isSafe(m) {
				continue
			}
			for k := 1; k <= n; k++ {
				switch {
				case k < m && pos["commit"+strconv.Itoa(k)] > pos["prepare"+strconv.Itoa(m)]:
					rt.Fatalf("exclusive call %d started before call %d committed: %v", m, k, trace.events)
				case k > m && pos["prepare"+strconv.Itoa(k)] < pos["commit"+strconv.Itoa(m)]:
					rt.Fatalf("call %d started before exclusive call %d committed: %v", k, m, trace.events)
				}
			}
		}
		ids := func(kind string) []string {
			out := log.ids(kind)
			slices.SortFunc(out, func(a, b string) int { return subNumber(a) - subNumber(b) })
			return out
		}
		if s, st := ids("start"), ids("settle"); len(s) != n || !slices.Equal(s, st) {
			rt.Fatalf("starts %v settles %v", s, st)
		}
	})
}

// TestPropertyDispatchEventOrder runs programs made of rounds — each round submits a few
// calls at once and awaits them all before the next round — against a log whose Settle
// sometimes lags. Whatever the timing: start events and settle events are each in
// submission order, every call has one of each with the settle after the start, and every
// settle of a round precedes every start of a later round.
func TestPropertyDispatchEventOrder(t *testing.T) {
	log := &laggingLog{}
	e := newEnv(t, tool.ModeCode, codemode.Config{Log: log})
	e.echo(t, "echo")
	rapid.Check(t, func(rt *rapid.T) {
		rounds := rapid.SliceOfN(rapid.IntRange(1, 3), 1, 4).Draw(rt, "rounds")
		log.restart(rapid.SliceOfN(rapid.Bool(), 12, 12).Draw(rt, "lag"))
		round := map[string]int{} // sub-call id → its round
		n := 0
		for r, k := range rounds {
			for range k {
				n++
				round["call-1:code:"+strconv.Itoa(n)] = r
			}
		}
		e.rt.setProgram(func(p *program) (coderuntime.Result, error) {
			for _, k := range rounds {
				var calls []*pending
				for range k {
					calls = append(calls, p.spawn("echo", obj("value", "x")))
				}
				for _, c := range calls {
					if _, err := c.wait(); err != nil {
						return coderuntime.Result{}, err
					}
				}
			}
			return coderuntime.Result{}, nil
		})
		if res := e.run(context.Background(), e.agent, "rounds"); res.IsError {
			rt.Fatalf("run failed: %s", res.Error.Message)
		}
		starts, settles := log.ids("start"), log.ids("settle")
		if len(starts) != n || !slices.Equal(starts, settles) || !slices.IsSortedFunc(starts, func(a, b string) int { return subNumber(a) - subNumber(b) }) {
			rt.Fatalf("starts %v, settles %v", starts, settles)
		}
		started := map[string]bool{}
		lastSettledRound := -1
		for _, ev := range log.all() {
			switch ev.kind {
			case "start":
				id := ev.start.SubCallID
				started[id] = true
				// Every call of the earlier rounds settled in the log already.
				for other, r := range round {
					if r < round[id] && !slices.Contains(settledBefore(log.all(), id), other) {
						rt.Fatalf("start of %s (round %d) precedes the settle of %s (round %d)", id, round[id], other, r)
					}
				}
			case "settle":
				id := ev.settle.SubCallID
				if !started[id] {
					rt.Fatalf("%s settled before it started", id)
				}
				lastSettledRound = max(lastSettledRound, round[id])
			}
		}
		if lastSettledRound != len(rounds)-1 {
			rt.Fatalf("the last settled round is %d of %d", lastSettledRound, len(rounds))
		}
	})
}

// settledBefore lists the sub-calls whose settle event precedes the start event of id.
func settledBefore(events []logEvent, id string) []string {
	var out []string
	for _, ev := range events {
		if ev.kind == "start" && ev.start.SubCallID == id {
			break
		}
		if ev.kind == "settle" {
			out = append(out, ev.settle.SubCallID)
		}
	}
	return out
}

// laggingLog is a recLog whose i-th Settle pauses briefly when lag[i] is set.
type laggingLog struct {
	recLog
	lag []bool // guarded by recLog.mu
	n   int    // guarded by recLog.mu
}

// restart forgets the events and lags the coming settles as lag says.
func (l *laggingLog) restart(lag []bool) {
	l.mu.Lock()
	l.events, l.lag, l.n = nil, lag, 0
	l.mu.Unlock()
}

func (l *laggingLog) Settle(agent *tool.Scope, p session.CodeDispatch) error {
	l.mu.Lock()
	i := l.n
	l.n++
	lag := i < len(l.lag) && l.lag[i]
	l.mu.Unlock()
	if lag {
		time.Sleep(time.Millisecond)
	}
	return l.recLog.Settle(agent, p)
}
