package viewer_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
	"github.com/dsh-go/dsh/viewer"
)

// hostile is tool output written to attack a page: a script, an event handler, a
// javascript: link and ANSI escapes.
const hostile = "<script>window.pwned = 1</script><img src=x onerror=\"window.pwned=2\"><a href=\"javascript:window.pwned=3\">click</a> \x1b[31mred\x1b[0m \x1b]8;;javascript:alert(1)\x07link\x1b]8;;\x07"

// defs presents the fixture's tools with the card variants a terminal shows.
func defs(name string) *tool.Definition {
	ptr := func(s string) *string { return &s }
	zero, one := 0, 1
	switch name {
	case "bash":
		return &tool.Definition{Name: name,
			PresentCall: func(any) *card.Call {
				return &card.Call{Card: card.Terminal, Title: "make test", Description: "run the tests", Cwd: "/work/app"}
			},
			PresentResult: func(_ any, res card.ToolResult) *card.Result {
				code := zero
				if res.IsError {
					code = one
				}
				var out string
				for _, b := range res.Content {
					out += b.Text
				}
				return &card.Result{Card: card.Terminal, Title: "make test", Output: out, ExitCode: &code}
			}}
	case "edit":
		d := []card.FileDiff{{Path: "/work/app/main.go", OldText: ptr("package main\n\nfunc main() {\n\tprintln(\"old side\")\n}\n"), NewText: "package main\n\nfunc main() {\n\tprintln(\"new side\")\n}\n"}}
		return &tool.Definition{Name: name,
			PresentCall: func(any) *card.Call { return &card.Call{Card: card.Diff, Title: "Edit main.go", Diffs: d} },
			PresentResult: func(any, card.ToolResult) *card.Result {
				return &card.Result{Card: card.Diff, Title: "Edit main.go", Diffs: d}
			}}
	case "grep":
		return &tool.Definition{Name: name,
			PresentResult: func(any, card.ToolResult) *card.Result {
				return &card.Result{Card: card.Search, Shape: "matches", Files: []card.SearchFile{{Path: "main.go", Matches: []card.SearchMatch{{LineNumber: 4, Line: "\tprintln(\"new side\")"}}}}}
			}}
	case "run_code":
		return &tool.Definition{Name: name,
			PresentCall: func(any) *card.Call {
				return &card.Call{Card: card.Generic, Title: "Count the lines", Kind: card.KindExecute, RawInput: "const r = await tools.read({ file_path: \"a.txt\" });\nreturn r.totalLines;"}
			}}
	case "web_search":
		return &tool.Definition{Name: name,
			PresentResult: func(any, card.ToolResult) *card.Result {
				return &card.Result{Card: card.Web, WebKind: "search", Sources: []card.WebSource{
					{URL: "https://go.dev/doc/", Title: "Go documentation"},
					{URL: "javascript:window.pwned=4", Title: "evil source"},
				}}
			}}
	}
	return nil
}

// recorder appends a scripted session to a file log.
type recorder struct {
	t   testing.TB
	log session.Writer
}

func (r *recorder) add(e session.Event) session.Event {
	r.t.Helper()
	got, err := r.log.AppendDurable(e)
	if err != nil {
		r.t.Fatal(err)
	}
	return got
}

func (r *recorder) user(text string) {
	r.add(session.UserMessage{Message: content.Message{Content: content.Texts(text)}}.Event())
}

func (r *recorder) assistant(text string, usage any) {
	r.add(session.AssistantMessage{Turn: 1, Step: 1, Message: content.Message{Content: content.Texts(text)}, Usage: usage}.Event())
}

func (r *recorder) call(id, name, args string, out string, isError bool) {
	c := r.add(session.ToolCall{Turn: 1, Step: 1, CallID: id, Name: name, Arguments: args}.Event())
	r.result(id, out, isError, c.Seq)
}

func (r *recorder) result(id, out string, isError bool, seq int64) {
	r.add(session.ToolResult{Turn: 1, Step: 1, CallID: id, Content: content.Texts(out), IsError: isError, SourceEventSeqs: []int64{seq}}.Event())
}

// newStore returns a store in a temporary directory.
func newStore(t testing.TB) *session.FileStore {
	t.Helper()
	store, err := session.Open(filepath.Join(t.TempDir(), "sessions"), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// record writes the fixture session, every card kind in one turn, and returns its id;
// the log is left open (live) when keepOpen, else closed.
func record(t testing.TB, store session.Store, keepOpen bool) (string, *recorder) {
	t.Helper()
	l, err := store.Create(context.Background(), session.Header{Cwd: "/work/app"})
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{t: t, log: l}
	r.add(session.TurnStart{Turn: 1}.Event())
	r.user("fix the <b>failing</b> test")
	r.assistant("Let me look.", map[string]any{"inputTokens": 1200.0, "outputTokens": 85.0})
	r.call("c1", "grep", `{"pattern":"old side"}`, "main.go:4", false)
	r.call("c2", "edit", `{"file_path":"main.go"}`, "edited", false)
	r.call("c3", "bash", `{"command":"make test"}`, hostile, false)
	r.call("c4", "web_search", `{"query":"go docs"}`, "2 sources", false)
	c := r.add(session.ToolCall{Turn: 1, Step: 1, CallID: "c5", Name: "run_code", Arguments: `{"description":"Count the lines","code":"await tools.read({file_path: \"a.txt\"})"}`}.Event())
	r.add(session.CodeDispatch{RootCallID: "c5", ParentCallID: "c5", SubCallID: "c5:code:1", Name: "read", Arguments: map[string]any{"file_path": "a.txt"}, Content: content.Texts("1 line")}.Event())
	r.add(session.CodeDispatch{RootCallID: "c5", ParentCallID: "c5", SubCallID: "c5:code:2", Name: "read", Arguments: map[string]any{"file_path": "missing.txt"}, IsError: true, Content: content.Texts("no such file")}.Event())
	r.result("c5", "2 lines", false, c.Seq)
	c = r.add(session.ToolCall{Turn: 1, Step: 1, CallID: "c6", Name: "bash", Arguments: `{"command":"git push"}`}.Event())
	r.add(session.ApprovalAsked{ID: "q1", ToolName: "bash", CallID: "c6", Reason: "matches ask rule bash(git push*)"}.Event())
	r.add(session.ApprovalDecided{ID: "q1", Outcome: session.ApprovalRejected, Answer: "no-with-feedback", Feedback: "not on Fridays"}.Event())
	r.result("c6", "Error: the user rejected tool \"bash\"", true, c.Seq)
	r.add(session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}}.Event())
	if !keepOpen {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Cleanup(func() { l.Close() })
	}
	return l.Header().ID, r
}

// serve starts the viewer over store.
func serve(t *testing.T, opts viewer.Options) *httptest.Server {
	t.Helper()
	if opts.Definition == nil {
		opts.Definition = defs
	}
	v, err := viewer.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(v)
	t.Cleanup(srv.Close)
	return srv
}

func itoa(n int) string { return strconv.Itoa(n) }

func content0() []content.Block { return content.Texts("ok") }
