package approval_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/policy/rules"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
	"github.com/dsh-go/dsh/tools/fs"
	"github.com/dsh-go/dsh/tools/shell"
)

// judged is a registry with the real file and shell tools in a temporary workspace, every
// write, edit and bash call asking, and a Terminal prompter fed through a pipe.
type judged struct {
	*term
	reg   *tool.Registry
	agent *tool.Scope
	log   *session.Memory
	ws    string
}

func newJudged(t *testing.T, save func(string) (string, error)) *judged {
	t.Helper()
	ws := t.TempDir()
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, install := range []func() (func(), error){
		func() (func(), error) { return fs.Install(reg, fs.Config{Root: ws}) },
		func() (func(), error) { return shell.Install(reg, shell.Config{Root: ws}) },
		func() (func(), error) {
			return rules.Install(reg.Global(), rules.Config{Ask: []string{"write", "edit", "bash"}, Workspace: ws})
		},
	} {
		undo, err := install()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(undo)
	}
	j := &judged{term: newTerm(t), reg: reg, log: session.NewMemory(nil), ws: ws}
	j.tty.Save = save
	svc, err := approval.New(approval.Config{
		Prompter: j.tty,
		Auditor:  approval.NewSessionAuditor(j.log),
		Workdir:  ws,
		Cards: func(a *tool.Scope, name string, args any) *card.Call {
			if d := reg.Get(name, a); d != nil && d.PresentCall != nil {
				return d.PresentCall(args)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg.SetApprover(svc)
	j.agent = reg.NewScope("agent", nil)
	t.Cleanup(j.agent.Close)
	if _, err := j.log.Append(session.TurnStart{Turn: 0}.Event()); err != nil {
		t.Fatal(err)
	}
	return j
}

// call runs one call on its own goroutine.
func (j *judged) call(name, args string) <-chan *tool.Result {
	ch := make(chan *tool.Result, 1)
	go func() {
		ch <- j.reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: name, Args: tool.ParseArguments(args), Agent: j.agent})
	}()
	return ch
}

// lastDecided returns the last approval/decided event.
func (j *judged) lastDecided(t *testing.T) session.ApprovalDecided {
	t.Helper()
	evs := j.log.Events()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == session.TypeApprovalDecided {
			d, err := session.DecodeApprovalDecided(evs[i])
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatal("no approval/decided event")
	return session.ApprovalDecided{}
}

// The question shows what the call would do: the diff of an edit, the content of a write,
// the command and where it runs. It used to show only "file_path: a.txt".
func TestQuestionShowsWhatTheCallDoes(t *testing.T) {
	tests := []struct {
		name, tool, args string
		want             []string
	}{
		{"edit", "edit", `{"file_path":"a.txt","old_string":"hello","new_string":"goodbye\nworld"}`,
			[]string{"● Edit a.txt", "a.txt modified +2 −1", "- hello", "+ goodbye", "+ world"}},
		{"write", "write", `{"file_path":"new.md","content":"# Title\nbody line\n"}`,
			[]string{"● Write new.md", "new.md created +2 −0", "+ # Title", "+ body line"}},
		{"bash", "bash", `{"command":"make test","description":"run the tests"}`,
			[]string{"● $ make test", "run the tests"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newJudged(t, nil)
			done := j.call(tt.tool, tt.args)
			j.screen.waitFor("Allow?", 1)
			j.typeLine("n\n")
			res := <-done
			if !res.IsError {
				t.Fatalf("a rejected call ran: %+v", res)
			}
			screen := j.screen.String()
			want := append(tt.want, "? "+tt.tool+" needs your approval", "✗ rejected")
			if tt.tool == "bash" {
				want = append(want, "in "+j.ws)
			}
			for _, w := range want {
				if !strings.Contains(screen, w) {
					t.Errorf("the question lacks %q:\n%s", w, screen)
				}
			}
			if strings.Contains(screen, "c1") || strings.Contains(screen, "allowed-once") {
				t.Errorf("the question shows internal words:\n%s", screen)
			}
			if n := strings.Count(screen, "requires approval by permission rule"); n != 1 {
				t.Errorf("the reason is shown %d times:\n%s", n, screen)
			}
		})
	}
}

// "No, and tell the model why": the typed text reaches the model in the result and the log
// records the answer and the text.
func TestRejectWithFeedback(t *testing.T) {
	j := newJudged(t, nil)
	done := j.call("bash", `{"command":"rm -rf build","description":"clean"}`)
	j.screen.waitFor("Allow?", 1)
	j.typeLine("f\n")
	j.screen.waitFor("Tell the model why", 1)
	j.typeLine("use make clean instead\n")
	res := testwait.Recv(t, done, "a value on done")
	if !res.IsError || res.Error == nil || res.Error.Message != `the user rejected tool "bash": use make clean instead` {
		t.Fatalf("result %+v", res.Error)
	}
	d := j.lastDecided(t)
	if d.Outcome != "rejected" || d.Answer != approval.AnswerNoFeedback || d.Feedback != "use make clean instead" {
		t.Errorf("decided %+v", d)
	}
}

// "Always, save it" adds the allow rule to the user's configuration file — keeping its
// comments and other keys — allows the call, and covers the rest of the session.
func TestAlwaysSaved(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	orig := "# my settings\nmodel: deepseek-flash # the fast one\npermissions:\n  allow: [read] # reads are fine\n  deny: [\"bash(rm -rf *)\"]\n"
	if err := os.WriteFile(cfg, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	j := newJudged(t, func(rule string) (string, error) { return cfg, approval.AddAllowRule(cfg, rule) })
	done := j.call("bash", `{"command":"go test ./...","description":"test"}`)
	j.screen.waitFor("Allow?", 1)
	if !strings.Contains(j.screen.String(), "[s]ave as a rule") {
		t.Fatalf("no save answer offered:\n%s", j.screen.String())
	}
	j.typeLine("s\n")
	if res := testwait.Recv(t, done, "a value on done"); res.IsError {
		t.Fatalf("saved call failed: %+v", res.Error)
	}
	d := j.lastDecided(t)
	if d.Outcome != "allowed-once" || d.Answer != approval.AnswerAlwaysSaved || d.Rule != "bash(go test ./...)" {
		t.Errorf("decided %+v", d)
	}
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"# my settings", "# the fast one", "# reads are fine", "model: deepseek-flash", `bash(rm -rf *)`} {
		if !strings.Contains(string(data), w) {
			t.Errorf("saved file lost %q:\n%s", w, data)
		}
	}
	var parsed struct{ Permissions rules.Config }
	if err := yaml.Unmarshal(data, &parsed); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(parsed.Permissions.Allow, ","); got != "read,bash(go test ./...)" {
		t.Errorf("allow = %q", got)
	}
	if fi, _ := os.Stat(cfg); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	// The same command again: no question.
	if res := <-j.call("bash", `{"command":"go test ./...","description":"test"}`); res.IsError {
		t.Fatalf("second call: %+v", res.Error)
	}
	if d := j.lastDecided(t); d.Answer != approval.AnswerRemembered {
		t.Errorf("second decided %+v", d)
	}
	if n := strings.Count(j.screen.String(), "Allow?"); n != 1 {
		t.Errorf("asked %d times", n)
	}
}

// A save that fails says why and asks again; nothing is lost.
func TestAlwaysSaveFails(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("permissions: [not, a, mapping]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	j := newJudged(t, func(rule string) (string, error) { return cfg, approval.AddAllowRule(cfg, rule) })
	done := j.call("bash", `{"command":"ls","description":"list"}`)
	j.screen.waitFor("Allow?", 1)
	j.typeLine("s\n")
	j.screen.waitFor("Please answer", 1)
	if !strings.Contains(j.screen.String(), "Could not save the rule") || !strings.Contains(j.screen.String(), "is not a mapping") {
		t.Errorf("screen:\n%s", j.screen.String())
	}
	j.typeLine("y\n")
	if res := testwait.Recv(t, done, "a value on done"); res.IsError {
		t.Fatalf("%+v", res.Error)
	}
	if data, _ := os.ReadFile(cfg); string(data) != "permissions: [not, a, mapping]\n" {
		t.Errorf("file changed: %q", data)
	}
}

func TestAddAllowRule(t *testing.T) {
	tests := []struct {
		name, before, rule string
		want               []string // the allow list after
		err                string
	}{
		{"no file", "", "bash(ls)", []string{"bash(ls)"}, ""},
		{"empty file", "\n", "read", []string{"read"}, ""},
		{"no permissions", "model: x\n", "read", []string{"read"}, ""},
		{"null permissions", "permissions:\n", "read", []string{"read"}, ""},
		{"null allow", "permissions:\n  allow:\n  ask: [bash]\n", "read", []string{"read"}, ""},
		{"flow list", "permissions: {allow: [a, b]}\n", "c", []string{"a", "b", "c"}, ""},
		{"duplicate", "permissions:\n  allow: [a]\n", "a", []string{"a"}, ""},
		{"invalid YAML", "permissions: [\n", "a", nil, "is not valid YAML"},
		{"allow not a list", "permissions:\n  allow: yes\n", "a", nil, "permissions.allow (line 2) is not a list"},
		{"not a mapping", "- a\n", "a", nil, "does not hold a YAML mapping"},
		{"empty rule", "", "", nil, "no rule to save"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sub", "config.yaml")
			if tt.before != "" {
				os.MkdirAll(filepath.Dir(path), 0o700)
				if err := os.WriteFile(path, []byte(tt.before), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := approval.AddAllowRule(path, tt.rule)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				if data, _ := os.ReadFile(path); string(data) != tt.before {
					t.Errorf("file changed to %q", data)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var parsed struct{ Permissions rules.Config }
			if err := yaml.Unmarshal(data, &parsed); err != nil {
				t.Fatalf("%v:\n%s", err, data)
			}
			if strings.Join(parsed.Permissions.Allow, "|") != strings.Join(tt.want, "|") {
				t.Errorf("allow = %q, want %q:\n%s", parsed.Permissions.Allow, tt.want, data)
			}
		})
	}
}

func TestAllowRule(t *testing.T) {
	tests := []struct {
		q    approval.Question
		want string
		ok   bool
	}{
		{approval.Question{ToolName: "bash", Argument: rules.Argument{Name: "command", Kind: rules.KindCommand, Value: "go test ./..."}}, "bash(go test ./...)", true},
		{approval.Question{ToolName: "edit", Workdir: "/ws", Argument: rules.Argument{Name: "file_path", Kind: rules.KindPath, Value: "src/a.go"}}, "edit(/ws/src/a.go)", true},
		{approval.Question{ToolName: "edit", Argument: rules.Argument{Name: "file_path", Kind: rules.KindPath, Value: "src/a.go"}}, "", false},
		{approval.Question{ToolName: "bash", Argument: rules.Argument{Name: "command", Kind: rules.KindCommand, Value: "rm *.o"}}, "", false},
		{approval.Question{ToolName: "bash", Argument: rules.Argument{Name: "command", Kind: rules.KindCommand, Value: "a\nb"}}, "", false},
		{approval.Question{ToolName: "mcp__x__y", Argument: rules.Argument{Name: "arguments", Kind: rules.KindText, Value: "{}"}}, "mcp__x__y", true},
	}
	for _, tt := range tests {
		got, ok := tt.q.AllowRule()
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s %q: AllowRule() = %q, %v; want %q, %v", tt.q.ToolName, tt.q.Argument.Value, got, ok, tt.want, tt.ok)
		}
	}
}

// Presets map onto the rules: which calls ask (and so, with nobody to answer, are denied),
// and that an allow rule still pre-approves and a deny rule still refuses.
func TestPresets(t *testing.T) {
	tools := []string{"read", "write", "edit", "bash", "mcp__x__y"}
	tests := []struct {
		preset string
		asks   []string // the tools that ask, of tools
	}{
		{"", nil},
		{approval.PresetReadOnly, []string{"write", "edit", "bash", "mcp__x__y"}},
		{approval.PresetAutoEdit, []string{"bash", "mcp__x__y"}},
		{approval.PresetFullAuto, nil},
	}
	for _, tt := range tests {
		t.Run(tt.preset, func(t *testing.T) {
			reg, err := tool.NewRegistry(tool.Config{})
			if err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int32
			for _, n := range tools {
				if _, err := reg.Register(echoTool(n, &runs)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := rules.Install(reg.Global(), rules.Config{Allow: []string{"bash(go test *)"}, Ask: []string{"mcp__*"}, Deny: []string{"bash(rm *)"}, Workspace: "/ws"}); err != nil {
				t.Fatal(err)
			}
			if _, err := approval.InstallPreset(reg, tt.preset); err != nil {
				t.Fatal(err)
			}
			var asked []string
			svc, err := approval.New(approval.Config{Policy: approval.PresetPolicy(tt.preset), Prompter: approval.PrompterFunc(func(_ context.Context, q approval.Question) (approval.Reply, error) {
				asked = append(asked, q.ToolName)
				return approval.Reply{Outcome: tool.ApprovalRejected}, nil
			})})
			if err != nil {
				t.Fatal(err)
			}
			reg.SetApprover(svc)
			agent := reg.NewScope("agent", nil)
			defer agent.Close()
			run := func(name, args string) *tool.Result {
				return reg.Execute(context.Background(), tool.Input{CallID: "c", Name: name, Args: tool.ParseArguments(args), Agent: agent})
			}
			wantAsks := tt.asks
			if tt.preset == "" {
				wantAsks = []string{"mcp__x__y"} // only the ask rule
			}
			for _, n := range tools {
				res := run(n, `{"command":"make"}`)
				if res.IsError != containsStr(wantAsks, n) {
					t.Errorf("%s: isError %v, want asked-and-rejected %v", n, res.IsError, containsStr(wantAsks, n))
				}
			}
			if strings.Join(asked, ",") != strings.Join(wantAsks, ",") {
				t.Errorf("asked about %q, want %q", asked, wantAsks)
			}
			if res := run("bash", `{"command":"go test ./...","description":"test"}`); res.IsError {
				t.Errorf("the allow rule did not pre-approve: %+v", res.Error)
			}
			if res := run("bash", `{"command":"rm -rf /"}`); !res.IsError || !strings.Contains(res.Error.Message, "denied by permission rule") {
				t.Errorf("the deny rule did not refuse: %+v", res)
			}
		})
	}
	if err := approval.ValidatePreset("yolo"); err == nil || !strings.Contains(err.Error(), `read-only, auto-edit or full-auto (got "yolo")`) {
		t.Errorf("ValidatePreset: %v", err)
	}
	if _, err := approval.InstallPreset(nil, approval.PresetReadOnly); err == nil {
		t.Error("InstallPreset(nil) succeeded")
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// FuzzAddAllowRule edits arbitrary configuration files: either the file is refused and left
// unchanged, or the result is valid YAML whose permissions.allow holds the rule once, and
// adding it again changes nothing.
func FuzzAddAllowRule(f *testing.F) {
	f.Add("model: x # c\npermissions:\n  allow: [read]\n", "bash(go test ./...)")
	f.Add("permissions: {allow: [a, b], deny: [c]}\n", "edit(/w/a.go)")
	f.Add("- not a mapping\n", "read")
	f.Add("permissions:\n  allow: yes\n", "read")
	f.Add("&a x: *a\n", "read")
	f.Add("", "mcp__x__y")
	f.Fuzz(func(t *testing.T, before, rule string) {
		if rule == "" {
			return
		}
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(before), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := approval.AddAllowRule(path, rule); err != nil {
			if b, _ := os.ReadFile(path); string(b) != before {
				t.Fatalf("refused (%v) but changed the file", err)
			}
			return
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Permissions struct{ Allow []any }
		}
		if err := yaml.Unmarshal(after, &doc); err != nil {
			t.Fatalf("the saved file is not valid YAML: %v\n%s", err, after)
		}
		n := 0
		for _, r := range doc.Permissions.Allow {
			if s, ok := r.(string); ok && s == rule {
				n++
			}
		}
		if n == 0 {
			t.Fatalf("rule %q not in allow %v:\n%s", rule, doc.Permissions.Allow, after)
		}
		if err := approval.AddAllowRule(path, rule); err != nil {
			t.Fatalf("adding again: %v", err)
		}
		if again, _ := os.ReadFile(path); string(again) != string(after) {
			t.Fatalf("adding again changed the file:\n%s\n---\n%s", after, again)
		}
	})
}
