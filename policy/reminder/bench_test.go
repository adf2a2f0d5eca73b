package reminder_test

import (
	"context"
	"testing"

	"github.com/dsh-go/dsh/internal/cputime"
	"github.com/dsh-go/dsh/policy/reminder"
	"github.com/dsh-go/dsh/tool"
)

// BenchmarkPostExecute measures a whole pipeline call for an agent without and with the
// reminder installed; the difference is the reminder's cost per call (canonicalizing the
// arguments and advancing the chain).
func BenchmarkPostExecute(b *testing.B) {
	args := tool.ParseArguments(`{"command":"go test ./...","description":"run the tests","nested":{"z":1,"a":[1,2,3]}}`)
	for _, installed := range []bool{false, true} {
		name := "without"
		if installed {
			name = "with"
		}
		b.Run(name, func(b *testing.B) {
			reg, _ := tool.NewRegistry(tool.Config{})
			if _, err := reg.Register(okTool("probe")); err != nil {
				b.Fatal(err)
			}
			if installed {
				if _, err := reminder.Install(reg.Global(), reminder.Config{}); err != nil {
					b.Fatal(err)
				}
			}
			agent := reg.NewScope("agent", nil)
			defer agent.Close()
			in := tool.Input{CallID: "c", Name: "probe", Args: args, Agent: agent}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				reg.Execute(ctx, in)
			}
		})
	}
}

// BenchmarkHook measures the reminder's post-execute hook by itself, for one agent
// repeating a call (the chain grows past the last threshold, so no reminder is built):
// canonicalizing the arguments, finding the agent's chain and extending it.
func BenchmarkHook(b *testing.B) {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := reg.Register(okTool("probe")); err != nil {
		b.Fatal(err)
	}
	agent := reg.NewScope("agent", nil)
	defer agent.Close()
	var exec *tool.Execution
	reg.OnPreExecute(func(_ context.Context, e *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		exec = e
		return next()
	})
	for _, c := range []struct{ name, args string }{
		{"flat", `{"text":"hello"}`},
		{"nested", `{"command":"go test ./...","description":"run the tests","nested":{"z":1,"a":[1,2,3]}}`},
	} {
		if res := reg.Execute(b.Context(), tool.Input{CallID: "c", Name: "probe", Args: tool.ParseArguments(c.args), Agent: agent}); res.IsError {
			b.Fatal(res.Error.Message)
		}
		r, err := reminder.New(reminder.Config{})
		if err != nil {
			b.Fatal(err)
		}
		accept := func() (tool.PostDecision, error) { return tool.PostDecision{}, nil }
		e := exec
		for range 10 { // past the last threshold
			r.PostExecute(b.Context(), e, nil, accept)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			defer cputime.PerOp(b, "cpu-ns/op", 1)()
			for b.Loop() {
				if d, err := r.PostExecute(b.Context(), e, nil, accept); err != nil || len(d.AdditionalContexts) != 0 {
					b.Fatalf("decision %+v, %v", d, err)
				}
			}
		})
	}
}
