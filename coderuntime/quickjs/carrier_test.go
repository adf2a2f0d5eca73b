package quickjs

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dsh-go/dsh/coderuntime"
)

// countCarriers makes rt count the goroutines its runs start to carry binding calls.
func countCarriers(rt *Runtime) *atomic.Int32 { return countHook(&rt.onCarrier) }

// countHook sets *hook to a function that counts its calls, and returns the count.
func countHook(hook *func()) *atomic.Int32 {
	var n atomic.Int32
	*hook = func() { n.Add(1) }
	return &n
}

// TestSequentialCallsShareACarrier: a program that awaits each call before making the next
// is served by at most one carrier goroutine for the whole run, in every process model:
// the calls whose idle frame the output reader held with the call are carried by the
// reader itself (how many depends on how the worker's writes meet the reader's reads), the
// others by that one carrier.
func TestSequentialCallsShareACarrier(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, rt *Runtime) {
		carriers := countCarriers(rt)
		inc := tools(map[string]coderuntime.Func{"inc": func(_ context.Context, args any) (any, error) {
			return args.(float64) + 1, nil
		}})
		res := run(t, rt, `let n = 0; for (let i = 0; i < 50; i++) n = await tools.inc(n); return n`, inc)
		wantValue(t, res, "50")
		if n := carriers.Load(); n > 1 {
			t.Fatalf("%d carriers started for 50 sequential calls, want at most 1", n)
		}
	})
}

// TestConcurrentCallsGetCarriers: calls in flight at once each get a carrier (the three
// meet inside their bindings, so none waits for another's carrier), and the calls made
// after them reuse the carriers left idle, at most maxIdleCarriers of them.
func TestConcurrentCallsGetCarriers(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, rt *Runtime) {
		carriers := countCarriers(rt)
		var entered atomic.Int32
		all := make(chan struct{})
		fns := tools(map[string]coderuntime.Func{
			"meet": func(ctx context.Context, args any) (any, error) {
				if entered.Add(1) == 3 {
					close(all)
				}
				select {
				case <-all:
					return args, nil
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				}
			},
			"inc": func(_ context.Context, args any) (any, error) { return args.(float64) + 1, nil },
		})
		res := run(t, rt, `
			const met = await Promise.all([tools.meet(1), tools.meet(2), tools.meet(3)]);
			let n = 0;
			for (let i = 0; i < 5; i++) n = await tools.inc(n);
			return [met, n];`, fns)
		wantValue(t, res, "[[1,2,3],5]")
		if n := carriers.Load(); n != 3 {
			t.Fatalf("%d carriers started, want 3", n)
		}
	})
}

// TestLargeRepliesCarried: replies too large to count the carrier idle before they are
// written (earlyIdleMax) are carried all the same, sequential and concurrent.
func TestLargeRepliesCarried(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, rt *Runtime) {
		carriers := countCarriers(rt)
		big := tools(map[string]coderuntime.Func{"big": func(_ context.Context, args any) (any, error) {
			return strings.Repeat("x", earlyIdleMax+int(args.(float64))), nil
		}})
		res := run(t, rt, `
			let n = 0;
			for (let i = 0; i < 20; i++) n += (await tools.big(i)).length;
			const all = await Promise.all([tools.big(0), tools.big(1), tools.big(2)]);
			return n + all.reduce((a, s) => a + s.length, 0);`, big)
		want := 23*earlyIdleMax + (19*20)/2 + 3
		wantValue(t, res, strconv.Itoa(want))
		if n := carriers.Load(); n < 1 || n > 23 {
			t.Fatalf("%d carriers started for 23 calls", n)
		}
	})
}
