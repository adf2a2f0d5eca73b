package tool_test

import (
	"context"
	"slices"
	"testing"

	"github.com/dsh-go/dsh/tool"
)

type fakeRunner struct{ lang string }

func (f fakeRunner) Language() string { return f.lang }
func (f fakeRunner) RunCode(context.Context, *tool.Call, string) (any, error) {
	return map[string]any{"logs": []any{}}, nil
}

func wireNames(t *testing.T, reg *tool.Registry, s *tool.Scope) ([]string, []string) {
	t.Helper()
	schemas, known, err := reg.WireTools(s)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range schemas {
		names = append(names, x.Name)
	}
	return names, known
}

// TestWireTools pins the wire contribution of docs/behaviour.md §3.10.
func TestWireTools(t *testing.T) {
	t.Run("native needs no runtime", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, strTool("read", ""))
		register(t, reg, strTool("bash", ""))
		a := reg.NewScope("a", nil)
		register(t, a, strTool("own", ""))
		if _, err := a.Restrict(tool.Filter{Deny: []string{"bash"}}); err != nil {
			t.Fatal(err)
		}
		names, known := wireNames(t, reg, a)
		if !slices.Equal(names, []string{"read", "own"}) || !slices.Equal(known, []string{"read", "bash", "own"}) {
			t.Errorf("names %v, known %v", names, known)
		}
	})
	t.Run("non-native requires a runtime with an SDK", func(t *testing.T) {
		for _, mode := range []tool.Mode{tool.ModeCode, tool.ModeBoth} {
			reg := newReg(t, tool.Config{Mode: mode})
			register(t, reg, strTool("echo", ""))
			_, _, err := reg.WireTools(nil)
			want := `dsh-tools: mode "` + string(mode) + `" requires a code runtime — install one (for example codemode with coderuntime/quickjs) or set tools mode to "native"`
			if err == nil || err.Error() != want {
				t.Errorf("%s without a runtime: %v", mode, err)
			}
			remove := reg.SetCodeRunner(fakeRunner{"cobol"})
			_, _, err = reg.WireTools(nil)
			if want := `dsh-tools: no SDK renderer registered for runtime language "cobol" (known: "typescript", "python")`; err == nil || err.Error() != want {
				t.Errorf("%s with an unknown language: %v", mode, err)
			}
			if _, err := reg.Schemas(nil); err == nil {
				t.Errorf("%s: Schemas projected a run_code without a flavour", mode)
			}
			remove()
			reg.SetCodeRunner(fakeRunner{"python"})
			names, known := wireNames(t, reg, nil)
			switch mode {
			case tool.ModeCode:
				if !slices.Equal(names, []string{"run_code"}) || !slices.Equal(known, []string{"run_code"}) {
					t.Errorf("code: names %v, known %v", names, known)
				}
			case tool.ModeBoth:
				if !slices.Equal(names, []string{"echo", "run_code"}) || !slices.Equal(known, []string{"echo", "run_code"}) {
					t.Errorf("both: names %v, known %v", names, known)
				}
			}
		}
	})
	t.Run("per scope", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, strTool("echo", ""))
		coder := reg.NewScope("coder", nil)
		if _, err := coder.PresentAs(tool.ModeBoth); err != nil {
			t.Fatal(err)
		}
		if _, _, err := reg.WireTools(coder); err == nil || !contains(err.Error(), `mode "both" requires a code runtime`) {
			t.Errorf("the missing runtime is not reported against the scope's own mode: %v", err)
		}
		if names, _ := wireNames(t, reg, nil); !slices.Equal(names, []string{"echo"}) {
			t.Errorf("global names %v", names)
		}
		reg.SetCodeRunner(fakeRunner{"typescript"})
		if names, known := wireNames(t, reg, coder); !slices.Equal(names, []string{"echo", "run_code"}) || !slices.Equal(known, []string{"echo", "run_code"}) {
			t.Errorf("coder: names %v, known %v", names, known)
		}
	})
	if tool.CodeOnlyInstruction != "`run_code` is the only tool you can call directly — a tool call naming any other tool fails. Reach every tool the SDK declares below from inside the program." {
		t.Error("CodeOnlyInstruction text")
	}
}
