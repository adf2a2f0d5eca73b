package agent

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// TestToolPanicTurnGoesOn: a tool body that panics or calls runtime.Goexit, alone or among
// parallel calls, and an oversized argument text each end in a coded failure the model
// sees, and the turn goes on to the model's next reply.
func TestToolPanicTurnGoesOn(t *testing.T) {
	f := newFixture(t)
	for _, d := range []*tool.Definition{
		tool.Must(tool.New("goexit", "Call runtime.Goexit.", func(context.Context, *tool.Call, textArgs) (string, error) {
			runtime.Goexit()
			return "", nil
		})),
		tool.Must(tool.New("goexit_par", "Call runtime.Goexit, in parallel.", func(context.Context, *tool.Call, textArgs) (string, error) {
			runtime.Goexit()
			return "", nil
		}, tool.ConcurrencySafe())),
		tool.Must(tool.New("panics", "Panic, in parallel.", func(context.Context, *tool.Call, textArgs) (string, error) {
			panic("the tool broke")
		}, tool.ConcurrencySafe())),
	} {
		if _, err := f.reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	big := `{"text":"` + strings.Repeat("x", tool.DefaultMaxArgBytes) + `"}`
	a, m := f.agent(t, []script.Reply{
		{ToolCalls: append(scriptCalls("goexit:c1:x", "goexit_par:c2:x", "panics:c3:x", "echo:c4:y"),
			script.ToolCall{ID: "c5", Name: "echo", Arguments: big})},
		{ExpectToolResults: []string{"c1", "c2", "c3", "c4", "c5"}, Text: "carried on"},
	}, Config{})
	out, err := a.Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if out.Text() != "carried on" || out.Reason.Kind != session.EndCompleted || out.Steps != 2 {
		t.Errorf("turn = %+v", out)
	}
	rs := toolResults(t, a.Log().Events())
	for id, want := range map[string]string{
		"c1": `tool "goexit": the body called runtime.Goexit`,
		"c2": `tool "goexit_par": the body called runtime.Goexit`,
		"c3": `tool "panics": the body panicked: the tool broke`,
	} {
		r := rs[id]
		if !r.IsError || r.Error == nil || r.Error.Code != tool.CodeToolPanic || blockText(r.Content) != "Error: "+want {
			t.Errorf("%s = %+v %+v", id, r, r.Error)
		}
	}
	if r := rs["c4"]; r.IsError || blockText(r.Content) != "echo: y" {
		t.Errorf("c4 = %+v", r)
	}
	if r := rs["c5"]; !r.IsError || r.Error == nil || r.Error.Code != tool.CodeInvalidArgs || !strings.Contains(blockText(r.Content), "over the limit of 1048576 bytes") {
		t.Errorf("c5 = %+v %+v", r, r.Error)
	}
	if got := requestResults(m.Requests()[1]); len(got) != 5 {
		t.Errorf("the model saw %d results, want 5", len(got))
	}
}
