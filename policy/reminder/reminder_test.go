package reminder_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/dsh-go/dsh/internal/testwait"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/policy/reminder"
	"github.com/dsh-go/dsh/tool"
)

func render(_, value any) ([]content.Block, error) {
	b, err := jsonv.Marshal(value)
	if err != nil {
		return nil, err
	}
	return content.Texts(string(b)), nil
}

func okTool(name string) *tool.Definition {
	return &tool.Definition{
		Name:        name,
		Description: "tool " + name,
		Parameters:  jsonv.NewObject(jsonv.Member{Name: "type", Value: "object"}),
		Output:      tool.Output{Schema: &jsonv.Object{}, Render: render},
		Execute:     func(context.Context, *tool.Call) (any, error) { return "ok", nil },
	}
}

// fixture is a registry with the tools probe, other and a.b, an agent scope and an
// installed reminder.
type fixture struct {
	t     *testing.T
	reg   *tool.Registry
	agent *tool.Scope
	rem   *reminder.Reminder
	n     int
}

func newFixture(t *testing.T, cfg reminder.Config) *fixture {
	t.Helper()
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"probe", "other", "a.b", "axb", "mcp__gh__issue"} {
		if _, err := reg.Register(okTool(name)); err != nil {
			t.Fatal(err)
		}
	}
	rem, err := reminder.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rem.Install(reg.Global()); err != nil {
		t.Fatal(err)
	}
	agent := reg.NewScope("agent", nil)
	t.Cleanup(agent.Close)
	return &fixture{t: t, reg: reg, agent: agent, rem: rem}
}

// call runs one call of name with args (JSON text) for agent and returns the texts of the
// reminders it carried.
func (f *fixture) call(agent *tool.Scope, name, args string) []string {
	f.t.Helper()
	f.n++
	res := f.reg.Execute(context.Background(), tool.Input{CallID: fmt.Sprintf("c%d", f.n), Name: name, Args: tool.ParseArguments(args), Agent: agent})
	return reminderTexts(f.t, res)
}

func reminderTexts(t *testing.T, res *tool.Result) []string {
	t.Helper()
	var out []string
	for _, m := range res.AdditionalContexts {
		if m.Source == nil || m.Source.Plugin != reminder.PluginID {
			continue
		}
		if len(m.Content) != 1 || m.Content[0].Type != content.TypeText {
			t.Fatalf("reminder content %+v", m.Content)
		}
		out = append(out, m.Content[0].Text)
	}
	return out
}

// TestEscalation pins the texts, the thresholds they fire at and the source of each.
func TestEscalation(t *testing.T) {
	f := newFixture(t, reminder.Config{})
	var got []string
	var sources []content.Source
	for i := 1; i <= 10; i++ {
		f.n++
		res := f.reg.Execute(context.Background(), tool.Input{CallID: fmt.Sprintf("c%d", i), Name: "probe", Args: tool.ParseArguments(`{"q":"same"}`), Agent: f.agent})
		for _, m := range res.AdditionalContexts {
			got = append(got, fmt.Sprintf("%d: %s", i, m.Content[0].Text))
			sources = append(sources, *m.Source)
			if m.Role != content.RoleUser || !strings.HasPrefix(m.ID, "msg_") {
				t.Errorf("message role %q id %q", m.Role, m.ID)
			}
		}
	}
	detailed := func(n int) string {
		return fmt.Sprintf("%d: Repeated tool call detected:\n- tool: probe\n- consecutive_calls: %d\n- arguments: {\"q\":\"same\"}\n"+
			"The repeated calls are not making progress. Do not call this tool with these exact arguments again. "+
			"Inspect the latest result and choose a different action, different arguments, or finish the task if enough evidence has been gathered.", n, n)
	}
	want := []string{
		"3: You are repeating the exact same tool call with identical arguments. Carefully analyze the previous result before calling again: if the task is not complete, try a different approach or different arguments instead of repeating the call.",
		detailed(5),
		detailed(8),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reminders (-want +got):\n%s", diff)
	}
	wantSources := []content.Source{
		{Kind: "plugin", Plugin: "repeat-tool-reminder", Form: "notice", Summary: "probe × 3"},
		{Kind: "plugin", Plugin: "repeat-tool-reminder", Form: "notice", Summary: "probe × 5"},
		{Kind: "plugin", Plugin: "repeat-tool-reminder", Form: "notice", Summary: "probe × 8"},
	}
	if diff := cmp.Diff(wantSources, sources); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
	if got := f.rem.Count(f.agent); got != 10 {
		t.Errorf("chain length %d, want 10", got)
	}
}

// TestGentleAtFirstThreshold checks the gentle text is keyed to the smallest threshold, not
// to the literal 3, and that thresholds are sorted.
func TestGentleAtFirstThreshold(t *testing.T) {
	f := newFixture(t, reminder.Config{Thresholds: []int{4, 2}})
	var got []string
	for range 4 {
		got = append(got, f.call(f.agent, "probe", `{}`)...)
	}
	if len(got) != 2 || got[0] != reminder.GentleText || !strings.Contains(got[1], "- consecutive_calls: 4\n- arguments: {}\n") {
		t.Errorf("reminders %q", got)
	}
}

// TestPreviewCap checks the detailed reminder quotes at most argumentsPreviewChars of the
// arguments while detection compares all of them.
func TestPreviewCap(t *testing.T) {
	f := newFixture(t, reminder.Config{Thresholds: []int{2, 3}, ArgumentsPreviewChars: 24})
	big := strings.Repeat("x", 400)
	args := `{"body":"` + big + `"}`
	var got []string
	for range 3 {
		got = append(got, f.call(f.agent, "probe", args)...)
	}
	if len(got) != 2 {
		t.Fatalf("reminders %q", got)
	}
	want := "- arguments: {\"body\":\"" + strings.Repeat("x", 15) + "… (+387 more chars)\n"
	if !strings.Contains(got[1], want) || strings.Contains(got[1], big) {
		t.Errorf("detailed reminder %q, want it to contain %q", got[1], want)
	}
	// A payload differing only after the preview cap is a different call.
	f.call(f.agent, "probe", `{"body":"`+big+`y"}`)
	if n := f.rem.Count(f.agent); n != 1 {
		t.Errorf("chain length after a call differing past the cap: %d, want 1", n)
	}
}

// TestChains pins how chains advance, reset and ignore calls (one sequence per case; each
// step is "name args", and want lists the 1-based steps that carry a reminder).
func TestChains(t *testing.T) {
	tests := []struct {
		name  string
		cfg   reminder.Config
		steps []string
		want  []int
	}{
		{"a different tracked call resets", reminder.Config{},
			[]string{"probe {\"q\":1}", "probe {\"q\":1}", "other {}", "probe {\"q\":1}", "probe {\"q\":1}", "probe {\"q\":1}"}, []int{6}},
		{"different arguments reset", reminder.Config{},
			[]string{"probe {\"q\":1}", "probe {\"q\":1}", "probe {\"q\":2}", "probe {\"q\":2}", "probe {\"q\":2}"}, []int{5}},
		{"excluded calls are transparent", reminder.Config{Exclude: []string{"other"}},
			[]string{"probe {}", "other {}", "probe {}", "other {}", "probe {}"}, []int{5}},
		{"include tracks only matching tools", reminder.Config{Include: []string{"mcp__*"}},
			[]string{"mcp__gh__issue {}", "probe {}", "mcp__gh__issue {}", "probe {}", "mcp__gh__issue {}", "probe {}"}, []int{5}},
		{"a dot in a pattern is literal", reminder.Config{Exclude: []string{"a.b"}},
			[]string{"axb {}", "a.b {}", "axb {}", "a.b {}", "axb {}"}, []int{5}},
		{"member order does not matter, deeply", reminder.Config{},
			[]string{`probe {"a":1,"b":{"x":1,"y":[{"m":1,"n":2}]}}`, `probe {"b":{"y":[{"n":2,"m":1}],"x":1},"a":1}`, `probe {"b":{"x":1,"y":[{"m":1,"n":2}]},"a":1}`}, []int{3}},
		{"array order matters", reminder.Config{},
			[]string{`probe {"a":[1,2]}`, `probe {"a":[2,1]}`, `probe {"a":[1,2]}`}, nil},
		{"unknown tools count", reminder.Config{},
			[]string{"nope {}", "nope {}", "nope {}"}, []int{3}},
		{"arguments that did not parse count as their raw text", reminder.Config{},
			[]string{"probe {oops", "probe {oops", "probe {oops"}, []int{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.cfg)
			var got []int
			for i, step := range tt.steps {
				name, args, _ := strings.Cut(step, " ")
				if len(f.call(f.agent, name, args)) > 0 {
					got = append(got, i+1)
				}
			}
			if !cmp.Equal(tt.want, got) {
				t.Errorf("reminders at steps %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPerAgent checks one agent's repetition never trips another's, and direct calls are
// ignored.
func TestPerAgent(t *testing.T) {
	f := newFixture(t, reminder.Config{})
	b := f.reg.NewScope("b", nil)
	defer b.Close()
	child := f.reg.NewScope("child", f.agent)
	defer child.Close()
	var got []string
	for range 2 {
		got = append(got, f.call(f.agent, "probe", `{}`)...)
		got = append(got, f.call(b, "probe", `{}`)...)
		got = append(got, f.call(child, "probe", `{}`)...)
		got = append(got, f.call(nil, "probe", `{}`)...)
	}
	if len(got) != 0 {
		t.Fatalf("reminders %q after two calls each", got)
	}
	for range 5 {
		got = append(got, f.call(nil, "probe", `{}`)...)
	}
	if len(got) != 0 || f.rem.Count(nil) != 0 {
		t.Fatalf("direct calls drew reminders %q", got)
	}
	if got := f.call(f.agent, "probe", `{}`); len(got) != 1 {
		t.Errorf("agent's third call: %q", got)
	}
	if f.rem.Count(b) != 2 || f.rem.Count(child) != 2 {
		t.Errorf("chains b=%d child=%d, want 2 each", f.rem.Count(b), f.rem.Count(child))
	}
}

// TestResets checks PreStep resets a chain only for a user-typed message, and Reset always.
func TestResets(t *testing.T) {
	f := newFixture(t, reminder.Config{})
	f.call(f.agent, "probe", `{}`)
	f.call(f.agent, "probe", `{}`)
	f.rem.PreStep(f.agent, []content.Message{
		{Role: content.RoleUser, Source: &content.Source{Kind: "plugin", Plugin: "x"}},
		{Role: content.RoleUser, Source: &content.Source{Kind: "tool", CallID: "c1"}},
		{Role: content.RoleUser},
	})
	if n := f.rem.Count(f.agent); n != 2 {
		t.Fatalf("chain after non-user messages: %d, want 2", n)
	}
	f.rem.PreStep(f.agent, []content.Message{{Role: content.RoleUser, Source: &content.Source{Kind: "user"}}})
	if n := f.rem.Count(f.agent); n != 0 {
		t.Fatalf("chain after a user message: %d, want 0", n)
	}
	if got := f.call(f.agent, "probe", `{}`); len(got) != 0 || f.rem.Count(f.agent) != 1 {
		t.Fatalf("first call after reset: reminders %q, chain %d", got, f.rem.Count(f.agent))
	}
	f.call(f.agent, "probe", `{}`)
	f.rem.Reset(f.agent)
	f.rem.Reset(nil)
	if n := f.rem.Count(f.agent); n != 0 {
		t.Errorf("chain after Reset: %d", n)
	}
}

// TestDeniedCallsCount checks calls denied before dispatch reach post-execute and count,
// while calls that never reach post-execute do not.
func TestDeniedCallsCount(t *testing.T) {
	f := newFixture(t, reminder.Config{})
	f.reg.OnPreExecute(func(_ context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		if exec.Name() == "probe" {
			return tool.Deny("probe is off limits"), nil
		}
		return next()
	})
	var got []string
	for range 3 {
		got = append(got, f.call(f.agent, "probe", `{}`)...)
	}
	if len(got) != 1 {
		t.Fatalf("denied calls drew %q, want one reminder", got)
	}

	// Arguments that are not lossless JSON end the call before post-execute.
	g := newFixture(t, reminder.Config{})
	for range 3 {
		res := g.reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "probe", Args: func() {}, Agent: g.agent})
		if !res.IsError || len(res.AdditionalContexts) != 0 {
			t.Fatalf("non-lossless arguments: %+v", res)
		}
	}
	if n := g.rem.Count(g.agent); n != 0 {
		t.Errorf("chain after final-result failures: %d, want 0", n)
	}
}

// TestFoldsOntoDownstreamDecision checks the reminder is prepended to what later hooks
// decided, keeping a block's feedback and a value replacement.
func TestFoldsOntoDownstreamDecision(t *testing.T) {
	downstream := content.Message{ID: "down", Role: content.RoleUser, Content: content.Texts("downstream"), Source: &content.Source{Kind: "plugin", Plugin: "later"}}
	tests := []struct {
		name     string
		decision tool.PostDecision
		check    func(t *testing.T, res *tool.Result)
	}{
		{"block", tool.BlockWith(content.Texts("blocked by policy"), downstream), func(t *testing.T, res *tool.Result) {
			if !res.IsError || res.Error.Message != "blocked by policy" || res.Content[0].Text != "blocked by policy" {
				t.Errorf("block not kept: %+v", res)
			}
		}},
		{"value replacement", tool.PostDecision{ReplaceValue: true, Value: "replaced", AdditionalContexts: []content.Message{downstream}}, func(t *testing.T, res *tool.Result) {
			if res.IsError || res.Value != "replaced" || res.Content[0].Text != `"replaced"` {
				t.Errorf("replacement not kept: %+v", res)
			}
		}},
		{"content replacement", tool.PostDecision{ReplaceContent: true, Content: content.Texts("new content"), AdditionalContexts: []content.Message{downstream}}, func(t *testing.T, res *tool.Result) {
			if res.IsError || res.Value != "ok" || res.Content[0].Text != "new content" {
				t.Errorf("replacement not kept: %+v", res)
			}
		}},
		{"accept", tool.Accept(downstream), func(t *testing.T, res *tool.Result) {
			if res.IsError || res.Value != "ok" {
				t.Errorf("accept changed: %+v", res)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, reminder.Config{Thresholds: []int{2}})
			f.reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
				return tt.decision, nil
			})
			f.call(f.agent, "probe", `{}`)
			res := f.reg.Execute(context.Background(), tool.Input{CallID: "c2", Name: "probe", Args: &jsonv.Object{}, Agent: f.agent})
			tt.check(t, res)
			var ids []string
			for _, m := range res.AdditionalContexts {
				ids = append(ids, m.Source.Plugin)
			}
			if !cmp.Equal(ids, []string{"repeat-tool-reminder", "later"}) {
				t.Errorf("contexts from %v, want the reminder first, then the downstream one", ids)
			}
		})
	}
}

// TestDownstreamErrorPassesThrough checks a failing later hook is not masked, and the
// chain still advanced.
func TestDownstreamErrorPassesThrough(t *testing.T) {
	f := newFixture(t, reminder.Config{Thresholds: []int{2}})
	f.reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		return tool.PostDecision{}, errors.New("later hook failed")
	})
	f.call(f.agent, "probe", `{}`)
	res := f.reg.Execute(context.Background(), tool.Input{CallID: "c2", Name: "probe", Args: &jsonv.Object{}, Agent: f.agent})
	if !res.IsError || res.Error.Message != "later hook failed" {
		t.Errorf("result %+v", res)
	}
	if n := f.rem.Count(f.agent); n != 2 {
		t.Errorf("chain %d, want 2", n)
	}
}

// TestUndo checks the returned function removes the hook.
func TestUndo(t *testing.T) {
	reg, _ := tool.NewRegistry(tool.Config{})
	if _, err := reg.Register(okTool("probe")); err != nil {
		t.Fatal(err)
	}
	undo, err := reminder.Install(reg.Global(), reminder.Config{Thresholds: []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	agent := reg.NewScope("a", nil)
	defer agent.Close()
	run := func() int {
		return len(reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "probe", Args: &jsonv.Object{}, Agent: agent}).AdditionalContexts)
	}
	run()
	if run() != 1 {
		t.Fatal("installed reminder did not fire")
	}
	undo()
	if run() != 0 || run() != 0 {
		t.Error("reminder fired after undo")
	}
	if _, err := reminder.Install(nil, reminder.Config{}); err == nil {
		t.Error("Install(nil) succeeded")
	}
	if _, err := reminder.Install(reg.Global(), reminder.Config{Thresholds: []int{1}}); err == nil {
		t.Error("Install with an invalid config succeeded")
	}
}

// TestChainDroppedWithAgent checks a chain does not outlive its agent scope.
func TestChainDroppedWithAgent(t *testing.T) {
	reg, _ := tool.NewRegistry(tool.Config{})
	if _, err := reg.Register(okTool("probe")); err != nil {
		t.Fatal(err)
	}
	rem, err := reminder.New(reminder.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rem.Install(reg.Global()); err != nil {
		t.Fatal(err)
	}
	func() {
		agent := reg.NewScope("short-lived", nil)
		reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "probe", Args: &jsonv.Object{}, Agent: agent})
		agent.Close()
	}()
	if rem.Chains() != 1 {
		t.Fatalf("chains %d, want 1", rem.Chains())
	}
	// Cleanups run asynchronously after a collection: collect until the chain is gone, for
	// as long as the test may run.
	testwait.Until(t, "the agent's chain to be dropped after it was collected", func() bool {
		runtime.GC()
		return rem.Chains() == 0
	})
	if rem.Cached() {
		t.Error("the chain the agent advanced last is still held after the agent was collected")
	}
}

func TestPreview(t *testing.T) {
	tests := []struct {
		s     string
		limit int
		want  string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc… (+1 more chars)"},
		{"ééé", 2, "éé… (+1 more chars)"},
		{"a😀b", 3, "a😀… (+1 more chars)"}, // 😀 is two UTF-16 units
		{"a😀b", 2, "a… (+3 more chars)"},  // never half a surrogate pair
		{"😀", 2, "😀"},
	}
	for _, tt := range tests {
		if got := reminder.Preview(tt.s, tt.limit); got != tt.want {
			t.Errorf("Preview(%q, %d) = %q, want %q", tt.s, tt.limit, got, tt.want)
		}
	}
}

// TestValidate pins the load-time messages of docs/behaviour.md §11.2.
func TestValidate(t *testing.T) {
	tests := []struct {
		cfg  reminder.Config
		want string
	}{
		{reminder.Config{}, ""},
		{reminder.DefaultConfig(), ""},
		{reminder.Config{Thresholds: []int{2}}, ""},
		{reminder.Config{Thresholds: []int{}}, "repeat-tool-reminder: `thresholds` must not be empty"},
		{reminder.Config{Thresholds: []int{1, 3}}, "repeat-tool-reminder: invalid threshold 1 — every threshold must be an integer >= 2"},
		{reminder.Config{Thresholds: []int{3, -4}}, "repeat-tool-reminder: invalid threshold -4 — every threshold must be an integer >= 2"},
		{reminder.Config{Thresholds: []int{3, 3}}, "repeat-tool-reminder: `thresholds` must not contain duplicates"},
		{reminder.Config{ArgumentsPreviewChars: -1}, "repeat-tool-reminder: invalid argumentsPreviewChars -1 — must be an integer >= 1"},
		{reminder.Config{Thresholds: []int{0}, ArgumentsPreviewChars: -1}, "repeat-tool-reminder: invalid threshold 0 — every threshold must be an integer >= 2"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("Validate(%+v) = %q, want %q", tt.cfg, got, tt.want)
		}
		if _, err := reminder.New(tt.cfg); (err == nil) != (tt.want == "") {
			t.Errorf("New(%+v) error %v", tt.cfg, err)
		}
	}
}

// TestYAML checks the YAML names and that YAML values a Go int would truncate fail with the
// reference's messages.
func TestYAML(t *testing.T) {
	tests := []struct {
		in      string
		want    reminder.Config
		wantErr string
	}{
		{in: "{}", want: reminder.Config{}},
		{in: "thresholds: [4, 2]\ninclude: [mcp__*]\nexclude: [todo_write]\nargumentsPreviewChars: 24", want: reminder.Config{Thresholds: []int{4, 2}, Include: []string{"mcp__*"}, Exclude: []string{"todo_write"}, ArgumentsPreviewChars: 24}},
		{in: "thresholds: null", want: reminder.Config{}},
		{in: "thresholds: []", wantErr: "repeat-tool-reminder: `thresholds` must not be empty"},
		{in: "thresholds: [2.5]", wantErr: "repeat-tool-reminder: invalid threshold 2.5 — every threshold must be an integer >= 2"},
		{in: "thresholds: [1, 2.5]", wantErr: "repeat-tool-reminder: invalid threshold 1 — every threshold must be an integer >= 2"},
		{in: "thresholds: [3.0, 3]", wantErr: "repeat-tool-reminder: `thresholds` must not contain duplicates"},
		{in: "argumentsPreviewChars: 0", wantErr: "repeat-tool-reminder: invalid argumentsPreviewChars 0 — must be an integer >= 1"},
		{in: "argumentsPreviewChars: 12.5", wantErr: "repeat-tool-reminder: invalid argumentsPreviewChars 12.5 — must be an integer >= 1"},
		{in: "threshold: [3]", wantErr: `repeat-tool-reminder: unknown config key "threshold" (line 1)`},
		{in: "thresholds: [x]", wantErr: "repeat-tool-reminder: yaml: unmarshal errors:\n  line 1: cannot unmarshal !!str `x` into float64"},
	}
	for _, tt := range tests {
		var got reminder.Config
		err := yaml.Unmarshal([]byte(tt.in), &got)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestTracked(t *testing.T) {
	rem, err := reminder.New(reminder.Config{Include: []string{"mcp__*", "bash"}, Exclude: []string{"mcp__*__list*"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"bash": true, "bash2": false, "mcp__gh__issue": true, "mcp__gh__list_issues": false, "read": false,
	} {
		if got := rem.Tracked(name); got != want {
			t.Errorf("Tracked(%q) = %v, want %v", name, got, want)
		}
	}
}
