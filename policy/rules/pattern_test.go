package rules_test

import (
	"testing"

	"github.com/dsh-go/dsh/policy/rules"
)

func TestParsePattern(t *testing.T) {
	valid := []struct {
		in, tool, arg string
		hasArg        bool
	}{
		{"bash", "bash", "", false},
		{"  bash  ", "bash", "", false},
		{"mcp__*", "mcp__*", "", false},
		{"*", "*", "", false},
		{"bash(git status*)", "bash", "git status*", true},
		{"bash(echo (hi))", "bash", "echo (hi)", true},
		{"bash( git  status )", "bash", " git  status ", true},
		{"read(**/.env)", "read", "**/.env", true},
		{"mcp__db__query(*DROP*)", "mcp__db__query", "*DROP*", true},
		{"mcp.server:tool-1", "mcp.server:tool-1", "", false},
	}
	for _, tt := range valid {
		p, err := rules.ParsePattern(tt.in)
		if err != nil {
			t.Errorf("ParsePattern(%q): %v", tt.in, err)
			continue
		}
		arg, has := p.Argument()
		if p.Tool() != tt.tool || arg != tt.arg || has != tt.hasArg {
			t.Errorf("ParsePattern(%q) = tool %q arg %q (%v)", tt.in, p.Tool(), arg, has)
		}
	}
	invalid := []struct{ in, want string }{
		{"", `rules: invalid pattern "": missing tool name`},
		{"   ", `rules: invalid pattern "   ": missing tool name`},
		{"bash(", `rules: invalid pattern "bash(": missing ")"`},
		{"bash(git status*", `rules: invalid pattern "bash(git status*": missing ")"`},
		{"(x)", `rules: invalid pattern "(x)": missing tool name before "("`},
		{"bash()", `rules: invalid pattern "bash()": empty argument pattern (write "bash" to match every call of the tool)`},
		{"bash(  )", `rules: invalid pattern "bash(  )": empty argument pattern (write "bash" to match every call of the tool)`},
		{"bash(x)y", `rules: invalid pattern "bash(x)y": unexpected text "y" after ")"`},
		{"bash)", `rules: invalid pattern "bash)": unexpected ")" in the tool name`},
		{"ba sh", `rules: invalid pattern "ba sh": tool name "ba sh" contains white space`},
		{"bash (ls)", `rules: invalid pattern "bash (ls)": tool name "bash " contains white space`},
		{"ba\x01sh", `rules: invalid pattern "ba\x01sh": tool name "ba\x01sh" contains a control character`},
		{"ba\xffsh", `rules: invalid pattern "ba\xffsh": not valid UTF-8`},
	}
	for _, tt := range invalid {
		_, err := rules.ParsePattern(tt.in)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParsePattern(%q) error %v\nwant %s", tt.in, err, tt.want)
		}
	}
}

func TestMustParsePattern(t *testing.T) {
	if got := rules.MustParsePattern(" read(src/**) ").String(); got != "read(src/**)" {
		t.Errorf("String() = %q", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustParsePattern did not panic")
		}
	}()
	rules.MustParsePattern("bash(")
}

// FuzzParsePattern checks parsing never panics, accepted patterns print as themselves and
// parse again identically, and matching them never panics.
func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{"bash", "bash(git status*)", "read(**/.env)", "mcp__*", "bash(", "(x)", "bash()", "a(b)c", "write(src/)", "bash(echo $(rm x) > y)", "*(*)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := rules.ParsePattern(s)
		if err != nil {
			return
		}
		again, err := rules.ParsePattern(p.String())
		if err != nil || again.String() != p.String() || again.Tool() != p.Tool() {
			t.Fatalf("%q parsed to %q, which parses to %q, %v", s, p.String(), again.String(), err)
		}
		r, err := rules.New(rules.Config{Deny: []string{s}, Allow: []string{s}, Workspace: "/ws"})
		if err != nil {
			t.Fatalf("New with a valid pattern: %v", err)
		}
		for _, name := range []string{p.Tool(), "bash", "read", "web_fetch", "other"} {
			for _, args := range []string{`{"command":"ls; rm -rf x"}`, `{"file_path":"../a/.env"}`, `{"url":"x"}`, `{}`, `"raw"`} {
				r.Evaluate(name, js(t, args))
			}
		}
	})
}
