package tool_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

func TestWorkersConfig(t *testing.T) {
	if reg, err := tool.NewRegistry(tool.Config{Workers: -1}); err == nil || reg != nil || err.Error() != "tool: Workers must not be negative, got -1" {
		t.Errorf("NewRegistry(Workers -1) = %v, %v", reg, err)
	}
	if reg, err := tool.NewRegistry(tool.Config{DirectSwitch: true}); err == nil || reg != nil || err.Error() != "tool: DirectSwitch needs Workers, got Workers 0" {
		t.Errorf("NewRegistry(DirectSwitch without Workers) = %v, %v", reg, err)
	}
	// Close on a registry without Workers does nothing, and may be repeated.
	reg := newReg(t)
	reg.Close()
	reg.Close()
}

// TestWorkersClose runs calls on a registry's kept goroutines — concurrent ones, wrapped
// ones (two goroutines a call) and ones whose body calls runtime.Goexit, leaves its thread
// locked, or both — and checks that they end as without Workers, that Close leaves no goroutine
// behind, and that the registry still runs calls after Close. With DirectSwitch the
// goroutine a locked body leaves is unlocked before the switch back.
func TestWorkersClose(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) { testWorkersClose(t, direct) })
	}
}

func testWorkersClose(t *testing.T, direct bool) {
	defer goleak.VerifyNone(t)
	reg, err := tool.NewRegistry(tool.Config{Workers: 2, DirectSwitch: direct})
	if err != nil {
		t.Fatal(err)
	}
	register(t, reg, bodyTool("echo", func(_ context.Context, call *tool.Call) (any, error) { return "ok", nil }))
	register(t, reg, bodyTool("exit", func(context.Context, *tool.Call) (any, error) { runtime.Goexit(); return nil, nil }))
	register(t, reg, bodyTool("lock", func(context.Context, *tool.Call) (any, error) { runtime.LockOSThread(); return "locked", nil }))
	register(t, reg, bodyTool("lockexit", func(context.Context, *tool.Call) (any, error) {
		runtime.LockOSThread()
		runtime.Goexit()
		return nil, nil
	}))
	call := func(name string) *tool.Result {
		return reg.Execute(context.Background(), tool.Input{CallID: "c", Name: name, Args: &jsonv.Object{}})
	}
	check := func(res *tool.Result, name string) error {
		switch name {
		case "exit", "lockexit":
			if !res.IsError || res.Error.Info.Code != tool.CodeToolPanic {
				return fmt.Errorf("%s: result = %s", name, resultJSON(t, res))
			}
		default:
			if res.IsError {
				return fmt.Errorf("%s: %s", name, res.Error.Message)
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*30)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				name := [...]string{"echo", "exit", "lock", "lockexit"}[(g+i)%4]
				if err := check(call(name), name); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// A wrapper makes a call use two goroutines: the steps' and the body's.
	undo := reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
		return next(ctx)
	})
	for _, name := range []string{"echo", "exit", "lock", "lockexit", "echo"} {
		if err := check(call(name), name); err != nil {
			t.Error(err)
		}
	}
	undo()
	reg.Close()
	if err := check(call("echo"), "echo"); err != nil {
		t.Errorf("after Close: %v", err)
	}
	reg.Close()
}

// TestWorkersEndWithRegistry checks the safety net for a registry dropped without Close: once
// the garbage collector finds it unreachable, its kept goroutines end.
func TestWorkersEndWithRegistry(t *testing.T) {
	defer goleak.VerifyNone(t)
	func() {
		reg, err := tool.NewRegistry(tool.Config{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		register(t, reg, bodyTool("echo", func(context.Context, *tool.Call) (any, error) { return "ok", nil }))
		if res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "echo", Args: &jsonv.Object{}}); res.IsError {
			t.Fatal(res.Error.Message)
		}
	}()
	// The registry is unreachable now; the collection queues its cleanup, which runs on the
	// runtime's cleanup goroutine and ends the idle goroutine (goleak waits for that).
	runtime.GC()
}
