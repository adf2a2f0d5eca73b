package timeout_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/internal/manualclock"
	"github.com/dsh-go/dsh/policy/timeout"
	"github.com/dsh-go/dsh/tool"
)

// TestPropertyDeadlineEqualsWrapper checks that the policy as Install adds it (a deadline
// the pipeline arms around the body, which then runs on the call's goroutine) ends every
// call exactly as the policy as an around-execute wrapper (Wrapper) does: for any budget,
// body outcome (success, failure, panic, Goexit, waiting for its context) and order in which
// the deadline and the caller's cancellation arrive, with and without another wrapper.
func TestPropertyDeadlineEqualsWrapper(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		budget := rapid.SampledFrom([]time.Duration{0, time.Millisecond, 1500 * time.Microsecond, time.Hour}).Draw(t, "budget")
		fire := rapid.Bool().Draw(t, "fire")
		cancelCall := rapid.Bool().Draw(t, "cancel")
		cancelFirst := rapid.Bool().Draw(t, "cancelFirst")
		body := rapid.SampledFrom([]string{"ok", "error", "panic", "goexit", "wait"}).Draw(t, "body")
		if body == "wait" && !(cancelCall || (fire && budget > 0)) {
			body = "ok" // nothing would end its wait
		}
		outer := rapid.Bool().Draw(t, "outerWrapper")
		run := func(asWrapper bool) (string, []time.Duration, int) {
			reg, err := tool.NewRegistry(tool.Config{})
			if err != nil {
				t.Fatal(err)
			}
			clk := manualclock.New()
			if outer {
				reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
					return next(ctx)
				})
			}
			if asWrapper {
				reg.WrapExecute(timeout.Wrapper(reg, timeout.Config{Clock: clk}), tool.ReadOnly())
			} else if _, err := timeout.Install(reg.Global(), timeout.Config{Clock: clk}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if _, err := reg.Register(bodyTool("t", budget, func(ctx context.Context, _ *tool.Call) (any, error) {
				if cancelCall && cancelFirst {
					cancel()
				}
				if fire {
					clk.FireAll()
				}
				if cancelCall && !cancelFirst {
					cancel()
				}
				switch body {
				case "error":
					return nil, errors.New("tool failed")
				case "panic":
					panic("boom")
				case "goexit":
					runtime.Goexit()
				case "wait":
					<-ctx.Done()
				}
				return "ok", nil
			})); err != nil {
				t.Fatal(err)
			}
			res := run(reg, ctx, "t", nil)
			b, err := res.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			return string(b), clk.Budgets(), clk.FireAll()
		}
		gotRes, gotArmed, gotLeft := run(false)
		wantRes, wantArmed, wantLeft := run(true)
		if gotRes != wantRes {
			t.Fatalf("result\n deadline: %s\n  wrapper: %s", gotRes, wantRes)
		}
		if len(gotArmed) != len(wantArmed) || gotLeft != 0 || wantLeft != 0 {
			t.Fatalf("timers armed %v (left %d) as a deadline, %v (left %d) as a wrapper", gotArmed, gotLeft, wantArmed, wantLeft)
		}
	})
}

// TestBudgetTooLargeBothWays checks that a budget above MaxBudget fails the call before its
// body runs, with the same error, whether the policy is installed or placed as a wrapper.
func TestBudgetTooLargeBothWays(t *testing.T) {
	for _, asWrapper := range []bool{false, true} {
		reg := newReg(t)
		if asWrapper {
			reg.WrapExecute(timeout.Wrapper(reg, timeout.Config{}))
		} else {
			install(t, reg.Global())
		}
		ran := false
		register(t, reg, bodyTool("t", timeout.MaxBudget+time.Millisecond, func(context.Context, *tool.Call) (any, error) {
			ran = true
			return "ok", nil
		}))
		res := run(reg, t.Context(), "t", nil)
		if want := `deadline timeoutMs must be a positive finite number no greater than 2147483647 (tool "t" declares 2147483648ms)`; res.Error == nil || res.Error.Message != want || ran {
			t.Errorf("as a wrapper %v: result %s, body ran %v", asWrapper, resultJSON(t, res), ran)
		}
	}
}
