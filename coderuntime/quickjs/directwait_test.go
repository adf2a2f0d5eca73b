package quickjs

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/coderuntime"
)

// TestTimersWhileACallIsPending runs timers while a binding call waits for its reply: the
// worker waits for its input and its timers at once (a worker process reads its input
// itself, with the next timer as the wait's timeout). The binding returns only once the
// timers have fired three times, so the timers must run while its reply is outstanding.
func TestTimersWhileACallIsPending(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, rt *Runtime) {
		ticked := make(chan struct{})
		bindings := tools(map[string]coderuntime.Func{
			"slow": func(ctx context.Context, _ any) (any, error) {
				select {
				case <-ticked:
					return "slow done", nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			},
			"tick": func(_ context.Context, args any) (any, error) {
				if args.(float64) == 3 {
					close(ticked)
				}
				return args, nil
			},
		})
		res := run(t, rt, `
			const slow = tools.slow({});
			let n = 0;
			await new Promise<void>(r => { const id = setInterval(() => {
				n++;
				if (n === 3) clearInterval(id);
				tools.tick(n).then(v => { if (v === 3) r() });
			}, 1) });
			return [await slow, n];`, bindings)
		if res.Error != nil {
			t.Fatalf("run failed: %+v", res.Error)
		}
		if got := jsonOf(t, res.Value); got != `["slow done",3]` {
			t.Fatalf("value %s", got)
		}
	})
}

// TestLargeReply sends a resolution larger than a pipe's buffer, so the worker reads its
// reply frame in several reads and waits between them.
func TestLargeReply(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, rt *Runtime) {
		big := strings.Repeat("0123456789", 100_000) // 1 MB
		bindings := tools(map[string]coderuntime.Func{
			"big": func(context.Context, any) (any, error) { return big, nil },
		})
		res := run(t, rt, `const a = await tools.big({}); const b = await tools.big({}); return [a.length, b.length, a === b]`, bindings)
		if res.Error != nil {
			t.Fatalf("run failed: %+v", res.Error)
		}
		if got := jsonOf(t, res.Value); got != `[1000000,1000000,true]` {
			t.Fatalf("value %s", got)
		}
	})
}
