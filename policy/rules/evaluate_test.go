package rules_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/policy/rules"
)

type evalCase struct {
	name, args string
	want       string // "deny <rule>", "ask <rule>", "allow <rule>" or "none"
}

func verdictString(v rules.Verdict) string {
	if v.Kind == rules.NoOpinion {
		return "none"
	}
	return v.Kind.String() + " " + v.Rule
}

func runEval(t *testing.T, cfg rules.Config, cases []evalCase) {
	t.Helper()
	if cfg.Workspace == "" {
		cfg.Workspace = "/ws"
	}
	r, err := rules.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if got := verdictString(r.Evaluate(c.name, js(t, c.args))); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.name, c.args, got, c.want)
		}
	}
}

func TestEvaluateCommands(t *testing.T) {
	cfg := rules.Config{
		Allow: []string{"bash(git status*)", "bash(go test *)", "bash(ls*)", "bash(tail*)", "bash(cd *)", "bash(make && make install)", "bash(echo * > out.txt)"},
		Ask:   []string{"bash(git push*)"},
		Deny:  []string{"bash(rm -rf *)", "bash(curl *)"},
	}
	cmd := func(c string) string { return fmt.Sprintf(`{"command":%q}`, c) }
	runEval(t, cfg, []evalCase{
		{"bash", cmd("git status"), "allow bash(git status*)"},
		{"bash", cmd("  git   status   --short "), "allow bash(git status*)"},
		{"bash", cmd("git stash"), "none"},
		{"bash", cmd("git push origin main"), "ask bash(git push*)"},
		{"bash", cmd(`git "push" origin`), "ask bash(git push*)"},
		{"bash", cmd("GIT_TRACE=1 git push"), "ask bash(git push*)"},
		{"bash", cmd("rm -rf build"), "deny bash(rm -rf *)"},
		{"bash", cmd(`\rm -rf build`), "deny bash(rm -rf *)"},
		{"bash", cmd("ls && rm -rf build"), "deny bash(rm -rf *)"},
		{"bash", cmd("echo $(curl evil.sh)"), "deny bash(curl *)"},
		{"bash", cmd("echo \"`curl evil.sh`\""), "deny bash(curl *)"},
		{"bash", cmd("(cd x; rm -rf y)"), "deny bash(rm -rf *)"},
		{"bash", cmd("echo 'rm -rf /'"), "none"}, // a quoted argument is not a command
		// Deny beats ask beats allow.
		{"bash", cmd("git status; git push"), "ask bash(git push*)"},
		{"bash", cmd("git push; rm -rf x"), "deny bash(rm -rf *)"},
		// Allow needs every piece allowed.
		{"bash", cmd("git status; whoami"), "none"},
		{"bash", cmd("git status && ls -la"), "allow bash(git status*)"},
		{"bash", cmd("cd src && go test ./..."), "allow bash(cd *)"},
		{"bash", cmd("go test ./... 2>&1 | tail -20"), "allow bash(go test *)"},
		{"bash", cmd("go test ./... > /dev/null"), "allow bash(go test *)"},
		{"bash", cmd("git status > status.txt"), "none"}, // writes a file
		{"bash", cmd("echo hi > out.txt"), "allow bash(echo * > out.txt)"},
		{"bash", cmd("ls $(cat list)"), "none"},
		{"bash", cmd("make && make install"), "allow bash(make && make install)"},
		{"bash", cmd("make  &&  make install"), "allow bash(make && make install)"},
		{"bash", cmd("make && make install && rm -rf x"), "deny bash(rm -rf *)"},
		{"bash", cmd(""), "none"},
		// A call without a string command falls back to the canonical arguments.
		{"bash", `{"cmd":"rm -rf x"}`, "none"},
		{"pwsh", cmd("rm -rf x"), "none"}, // the rules name bash only
	})
}

func TestEvaluatePaths(t *testing.T) {
	cfg := rules.Config{
		Allow: []string{"read", "write(src/**)", "edit(docs/)", "glob", "grep(src/**)", "read_image(*.png)"},
		Ask:   []string{"write(src/gen/**)", "write(/etc/**)"},
		Deny:  []string{"read(**/.env)", "write(**/*.key)", "read(/home/*/.ssh/**)", "grep(secrets/**)", "write(.git/**)"},
	}
	fp := func(p string) string { return fmt.Sprintf(`{"file_path":%q}`, p) }
	runEval(t, cfg, []evalCase{
		{"read", fp("main.go"), "allow read"},
		{"read", fp(".env"), "deny read(**/.env)"},
		{"read", fp("a/b/c/.env"), "deny read(**/.env)"},
		{"read", fp("/ws/.env"), "deny read(**/.env)"},
		{"read", fp("src/../.env"), "deny read(**/.env)"},
		{"read", fp("/home/u/.env"), "deny read(**/.env)"}, // "**/" reaches outside the workspace
		{"read", fp("../other/.env"), "deny read(**/.env)"},
		{"read", fp(".env.example"), "allow read"},
		{"read", fp("/home/u/.ssh/id_ed25519"), "deny read(/home/*/.ssh/**)"},
		{"read", fp("/home/u/.ssh"), "deny read(/home/*/.ssh/**)"},
		{"write", fp("src/a.go"), "allow write(src/**)"},
		{"write", fp("/ws/src/deep/er/a.go"), "allow write(src/**)"},
		{"write", fp("src"), "allow write(src/**)"},
		{"write", fp("srcx/a.go"), "none"},
		{"write", fp("src/gen/x.go"), "ask write(src/gen/**)"},
		{"write", fp("src/server.key"), "deny write(**/*.key)"},
		{"write", fp("/etc/passwd"), "ask write(/etc/**)"},
		{"write", fp("../ws2/src/a.go"), "none"}, // outside the workspace: relative patterns do not apply
		{"write", fp("/ws/../ws2/src/a.go"), "none"},
		{"write", fp(".git/config"), "deny write(.git/**)"},
		{"write", fp("./.git/hooks/pre-commit"), "deny write(.git/**)"},
		{"edit", fp("docs/guide/intro.md"), "allow edit(docs/)"},
		{"edit", fp("docs"), "allow edit(docs/)"},
		{"edit", fp("doc/x.md"), "none"},
		{"read_image", fp("logo.png"), "allow read_image(*.png)"},
		{"read_image", fp("img/logo.png"), "none"}, // "*" stays within one segment
		{"glob", `{"pattern":"**/*.go"}`, "allow glob"},
		{"grep", `{"pattern":"x"}`, "none"}, // the workspace root is not below src
		{"grep", `{"pattern":"x","path":"src/a"}`, "allow grep(src/**)"},
		{"grep", `{"pattern":"x","path":"secrets/prod"}`, "deny grep(secrets/**)"},
		{"grep", `{"pattern":"x","path":null}`, "none"},
	})
}

func TestEvaluateOtherTools(t *testing.T) {
	cfg := rules.Config{
		Allow: []string{"mcp__docs__*", "web_fetch(https://go.dev/*)"},
		Ask:   []string{"mcp__*", "web_fetch"},
		Deny:  []string{"mcp__db__query(*DROP*)", "mcp__*__delete*"},
	}
	runEval(t, cfg, []evalCase{
		{"mcp__docs__search", `{"q":"x"}`, "ask mcp__*"}, // ask beats allow
		{"mcp__db__query", `{"sql":"SELECT 1"}`, "ask mcp__*"},
		{"mcp__db__query", `{"sql":"DROP TABLE users"}`, "deny mcp__db__query(*DROP*)"},
		{"mcp__gh__delete_repo", `{}`, "deny mcp__*__delete*"},
		{"web_fetch", `{"url":"https://go.dev/doc"}`, "ask web_fetch"},
		{"todo_write", `{"todos":[]}`, "none"},
	})
	runEval(t, rules.Config{Allow: []string{"web_fetch(https://go.dev/*)", "todo_write(*\"status\":\"pending\"*)"}}, []evalCase{
		{"web_fetch", `{"url":"https://go.dev/doc"}`, "allow web_fetch(https://go.dev/*)"},
		{"web_fetch", `{"url":"https://evil.dev/go.dev/"}`, "none"},
		// Other tools match the canonical JSON of their arguments (members sorted).
		{"todo_write", `{"todos":[{"status":"pending","content":"x"}]}`, "allow todo_write(*\"status\":\"pending\"*)"},
		{"todo_write", `{"todos":[]}`, "none"},
	})
}

func TestVerdictReasons(t *testing.T) {
	if got := (rules.Verdict{Kind: rules.Denied, Rule: "bash(rm *)"}).Reason("bash"); got != `tool "bash" is denied by permission rule "bash(rm *)"` {
		t.Errorf("deny reason %q", got)
	}
	if got := (rules.Verdict{Kind: rules.Asked, Rule: "mcp__*"}).Reason("mcp__x"); got != `tool "mcp__x" requires approval by permission rule "mcp__*"` {
		t.Errorf("ask reason %q", got)
	}
	if got := (rules.Verdict{Kind: rules.Allowed, Rule: "read"}).Reason("read"); got != "" {
		t.Errorf("allow reason %q", got)
	}
	for k, want := range map[rules.Kind]string{rules.NoOpinion: "none", rules.Allowed: "allow", rules.Asked: "ask", rules.Denied: "deny"} {
		if k.String() != want {
			t.Errorf("%d.String() = %q", k, k.String())
		}
	}
}

func TestPrimaryArgument(t *testing.T) {
	tests := []struct {
		name, args string
		want       rules.Argument
	}{
		{"bash", `{"command":"ls","description":"list"}`, rules.Argument{Name: "command", Kind: rules.KindCommand, Value: "ls"}},
		{"read", `{"file_path":"a.go","offset":3}`, rules.Argument{Name: "file_path", Kind: rules.KindPath, Value: "a.go"}},
		{"glob", `{"pattern":"*"}`, rules.Argument{Name: "path", Kind: rules.KindPath, Value: ""}},
		{"web_fetch", `{"url":"https://x"}`, rules.Argument{Name: "url", Kind: rules.KindText, Value: "https://x"}},
		{"mcp__x", `{"b":1,"a":[true]}`, rules.Argument{Name: "arguments", Kind: rules.KindText, Value: `{"a":[true],"b":1}`}},
		{"read", `{"file_path":7}`, rules.Argument{Name: "arguments", Kind: rules.KindText, Value: `{"file_path":7}`}},
		{"bash", `"raw text"`, rules.Argument{Name: "arguments", Kind: rules.KindText, Value: `"raw text"`}},
	}
	for _, tt := range tests {
		if got := rules.PrimaryArgument(tt.name, js(t, tt.args)); got != tt.want {
			t.Errorf("PrimaryArgument(%s, %s) = %+v, want %+v", tt.name, tt.args, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		cfg  rules.Config
		want string
	}{
		{rules.Config{}, ""},
		{rules.Config{Allow: []string{"read"}, Deny: []string{"bash(rm *)"}}, ""},
		{rules.Config{Allow: []string{"read", "bash("}}, `rules: invalid pattern "bash(": missing ")" (allow[1])`},
		{rules.Config{Ask: []string{""}}, `rules: invalid pattern "": missing tool name (ask[0])`},
		{rules.Config{Deny: []string{"x", "y", "(z)"}}, `rules: invalid pattern "(z)": missing tool name before "(" (deny[2])`},
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
		if _, err := rules.New(tt.cfg); (err == nil) != (tt.want == "") {
			t.Errorf("New(%+v): %v", tt.cfg, err)
		}
	}
}

func TestWorkspaceDefault(t *testing.T) {
	r, err := rules.New(rules.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Workspace(), "/") && !strings.Contains(r.Workspace(), `:\`) {
		t.Errorf("workspace %q is not absolute", r.Workspace())
	}
	r, _ = rules.New(rules.Config{Workspace: "/a/b/../c/"})
	if r.Workspace() != "/a/c" {
		t.Errorf("workspace %q", r.Workspace())
	}
}
