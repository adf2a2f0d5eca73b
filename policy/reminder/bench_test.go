package reminder_test

import (
	"context"
	"testing"

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
