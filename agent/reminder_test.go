package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/llm/script"
	"github.com/dsh-go/dsh/policy/reminder"
	"github.com/dsh-go/dsh/session"
)

// TestRepeatReminderThroughTheLoop wires the repeat-tool reminder as the CLI does: its
// reminder reaches the model as a user/message of the next step, and a user's message
// resets the chain through the pre-step hook.
func TestRepeatReminderThroughTheLoop(t *testing.T) {
	f := newFixture(t)
	r, err := reminder.New(reminder.Config{Thresholds: []int{3}})
	if err != nil {
		t.Fatal(err)
	}
	undo, err := r.Install(f.reg.Global())
	if err != nil {
		t.Fatal(err)
	}
	defer undo()
	a, m := f.agent(t, []script.Reply{
		{ToolCalls: scriptCalls("echo:c1:same")},
		{ToolCalls: scriptCalls("echo:c2:same")},
		{ToolCalls: scriptCalls("echo:c3:same")},
		{Text: "I will stop repeating"},
		{ToolCalls: scriptCalls("echo:c4:same")},
		{Text: "done"},
	}, Config{})
	a.OnPreStep(func(ctx context.Context, s PreStep) error {
		r.PreStep(s.Scope, s.Claimed)
		return nil
	})
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	var plugin []session.UserMessage
	for _, e := range a.Log().Events() {
		if e.Type == session.TypeUserMessage {
			p, _ := session.DecodeUserMessage(e)
			if p.Message.Source.Kind == "plugin" {
				plugin = append(plugin, p)
			}
		}
	}
	if len(plugin) != 1 || plugin[0].Message.Source.Summary != "echo × 3" || !strings.HasPrefix(blockText(plugin[0].Message.Content), "You are repeating the exact same tool call") {
		t.Fatalf("reminders = %+v", plugin)
	}
	last := m.Requests()[3].Messages
	if got := last[len(last)-1]; got.Source == nil || got.Source.Plugin != reminder.PluginID {
		t.Fatalf("the fourth request does not end with the reminder: %+v", got)
	}
	if _, err := a.Run(context.Background(), "again"); err != nil {
		t.Fatal(err)
	}
	if n := r.Count(a.Scope()); n != 1 {
		t.Fatalf("chain after the user spoke = %d, want 1", n)
	}
}
