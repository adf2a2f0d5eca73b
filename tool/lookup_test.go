package tool_test

import (
	"context"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/tool"
)

// TestPropertyLookupFollowsRegistrations: however many tools a scope holds (below and above
// the count where the registry indexes them by name) and in whatever order they are
// registered and removed, Get finds exactly the registered ones, a call of a removed tool
// fails as unknown, and a scope's own tool shadows the global one of the same name.
func TestPropertyLookupFollowsRegistrations(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		reg := newReg(t)
		agent := reg.NewScope("agent", nil)
		defer agent.Close()
		type slot struct {
			undo  func()
			reply string
		}
		global, own := map[string]slot{}, map[string]slot{}
		ops := rapid.IntRange(1, 60).Draw(t, "ops")
		for i := range ops {
			name := fmt.Sprint("t", rapid.IntRange(0, 19).Draw(t, "name"))
			inAgent := rapid.Bool().Draw(t, "agent")
			var s interface {
				Register(*tool.Definition) (func(), error)
			} = reg
			m := global
			if inAgent {
				m, s = own, agent
			}
			if cur, ok := m[name]; ok {
				cur.undo()
				delete(m, name)
				continue
			}
			reply := fmt.Sprint(name, "#", i)
			m[name] = slot{undo: register(t, s, strTool(name, reply)), reply: reply}
		}
		for n := range 20 {
			name := fmt.Sprint("t", n)
			g, inGlobal := global[name]
			if def := reg.Get(name, nil); (def != nil) != inGlobal {
				t.Fatalf("Get(%s, global) = %v, registered %v", name, def, inGlobal)
			}
			want := ""
			switch o, ok := own[name]; {
			case ok:
				want = o.reply
			case inGlobal:
				want = g.reply
			}
			res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: name, Args: map[string]any{}, Agent: agent})
			if want == "" {
				if !res.IsError || res.Error.Info == nil || res.Error.Info.Code != tool.CodeUnknownTool {
					t.Fatalf("%s for the agent: %v %q, want unknown tool", name, res.IsError, firstText(res))
				}
				continue
			}
			if res.IsError || firstText(res) != want {
				t.Fatalf("%s for the agent: %v %q, want %q", name, res.IsError, firstText(res), want)
			}
		}
	})
}

// BenchmarkGet looks a tool up in a registry of 32 tools, as every call does two or three
// times (Prepare, the timeout policy's budget, the body): for the global scope, and for an
// agent's scope that inherits the tool (the agent loop's calls).
func BenchmarkGet(b *testing.B) {
	reg := newReg(b)
	for i := range 32 {
		register(b, reg, strTool(fmt.Sprint("tool_", i), "ok"))
	}
	agent := reg.NewScope("agent", nil)
	for _, bc := range []struct {
		name  string
		scope *tool.Scope
	}{{"global", nil}, {"agent", agent}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if reg.Get("tool_31", bc.scope) == nil {
					b.Fatal("tool_31 not found")
				}
			}
		})
	}
}
