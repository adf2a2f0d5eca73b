package rules_test

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/policy/rules"
)

// FuzzCommandDecision feeds arbitrary command strings to the rules. They must never panic
// and must decide the same way twice; and, checked against the shell parser directly, a
// command in which "rm" runs as a plainly written simple command anywhere is denied by
// "bash(rm *)" and never allowed, and a command that does not parse, or runs a program
// whose name is computed, is never allowed. The seed corpus is in testdata/fuzz;
// scripts/fuzz.sh runs the target for a bounded time.
func FuzzCommandDecision(f *testing.F) {
	for _, s := range rmBypasses {
		f.Add(s)
	}
	for _, s := range []string{"git status", "go test ./... 2>&1 | tail", "echo 'rm f1'", "ls > out", "x=1", "$(", "`", "<<EOF", "a\\"} {
		f.Add(s)
	}
	deny, err := rules.New(rules.Config{Deny: []string{"bash(rm *)"}, Allow: []string{"bash(*)"}, Workspace: "/ws"})
	if err != nil {
		f.Fatal(err)
	}
	allowAll, err := rules.New(rules.Config{Allow: []string{"bash(*)"}, Workspace: "/ws"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		args := jsonv.NewObject(jsonv.Member{Name: "command", Value: cmd})
		v := deny.Evaluate("bash", args)
		if again := deny.Evaluate("bash", args); again != v {
			t.Fatalf("%q: %+v, then %+v", cmd, v, again)
		}
		if v.Kind == rules.Denied && v.Reason("bash") == "" {
			t.Fatalf("%q: denied without a reason", cmd)
		}
		a := allowAll.Evaluate("bash", args)
		f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
		if err != nil {
			if v.Kind != rules.Denied || a.Kind == rules.Allowed {
				t.Fatalf("%q does not parse (%v) but gets %v / %v", cmd, err, v.Kind, a.Kind)
			}
			return
		}
		runsRm, computed := false, false
		syntax.Walk(f, func(n syntax.Node) bool {
			call, ok := n.(*syntax.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			name := call.Args[0]
			lit := name.Lit()
			switch {
			case lit == "rm" && len(call.Args) > 1:
				runsRm = true
			case len(name.Parts) == 1 && !isLiteral(name.Parts[0]):
				computed = true
			}
			return true
		})
		if runsRm && v.Kind != rules.Denied {
			t.Fatalf("%q runs rm but gets %v", cmd, v.Kind)
		}
		if computed && a.Kind == rules.Allowed {
			t.Fatalf("%q runs a computed program but is allowed", cmd)
		}
	})
}

// isLiteral reports whether a word part is literal text (no expansion).
func isLiteral(p syntax.WordPart) bool {
	switch p.(type) {
	case *syntax.Lit, *syntax.SglQuoted:
		return true
	case *syntax.DblQuoted:
		for _, in := range p.(*syntax.DblQuoted).Parts {
			if !isLiteral(in) {
				return false
			}
		}
		return true
	}
	return false
}
