package approval_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/dsh-go/dsh/internal/cputime"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/tool"
)

// BenchmarkPreset measures a whole pipeline call of a tool the auto-edit preset lets
// through (read), without the preset and with it and the approval service installed: the
// difference is what the approval policy costs a call that needs no approval (the preset's
// pre-execute hook; the service is not consulted).
func BenchmarkPreset(b *testing.B) {
	for _, installed := range []bool{false, true} {
		name := "without"
		if installed {
			name = "with"
		}
		b.Run(name, func(b *testing.B) {
			reg, err := tool.NewRegistry(tool.Config{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := reg.Register(echoTool("read", new(atomic.Int32))); err != nil {
				b.Fatal(err)
			}
			if installed {
				if _, err := approval.InstallPreset(reg, approval.PresetAutoEdit); err != nil {
					b.Fatal(err)
				}
				if _, err := approval.Install(reg, approval.Config{Policy: approval.PresetPolicy(approval.PresetAutoEdit), Prompter: approval.NonInteractive()}); err != nil {
					b.Fatal(err)
				}
			}
			in := tool.Input{CallID: "c", Name: "read", Args: tool.ParseArguments(`{"text":"hello"}`)}
			ctx := context.Background()
			b.ReportAllocs()
			defer cputime.PerOp(b, "cpu-ns/op", 1)()
			for b.Loop() {
				if res := reg.Execute(ctx, in); res.IsError {
					b.Fatal(res.Error.Message)
				}
			}
		})
	}
}
