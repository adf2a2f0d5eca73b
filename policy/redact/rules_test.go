package redact

import (
	"regexp"
	"strings"
	"testing"
)

// TestRulesCompile compiles every rule's expression, which the redactor compiles only when
// the rule's anchor is first found, and checks what the scanner relies on: the secret group
// exists and the rule has an anchor to be found by.
func TestRulesCompile(t *testing.T) {
	for i, ru := range rules {
		re, err := regexp.Compile(ru.pattern)
		if err != nil {
			t.Errorf("rule %d (%s): %v", i, ru.kind, err)
			continue
		}
		if ru.group > re.NumSubexp() {
			t.Errorf("rule %d (%s): secret group %d, but the expression has %d groups", i, ru.kind, ru.group, re.NumSubexp())
		}
		if len(ru.anchors) == 0 {
			t.Errorf("rule %d (%s) has no anchors", i, ru.kind)
		}
	}
}

// TestExprLazy checks that a redactor compiles a rule's expression only when text holding
// one of its anchors is scanned, and then once: clean text compiles nothing.
func TestExprLazy(t *testing.T) {
	r := NewRedactor(nil)
	compiled := func() (n int) {
		for i := range r.exprs {
			if r.exprs[i].re != nil {
				n++
			}
		}
		return n
	}
	if got, _ := r.String("nothing secret here: just text, Keys and -flags"); got != "nothing secret here: just text, Keys and -flags" {
		t.Fatalf("clean text changed: %q", got)
	}
	if n := compiled(); n != 0 {
		t.Fatalf("%d expressions compiled for clean text, want 0", n)
	}
	secret := "token ghp_" + strings.Repeat("aB3dE5gH7j", 3) + "k9L2mN"
	out, _ := r.String(secret)
	if !strings.Contains(out, "[REDACTED:github-pat]") {
		t.Fatalf("Redact(%q) = %q, want the github-pat marker", secret, out)
	}
	if n := compiled(); n != 1 {
		t.Fatalf("%d expressions compiled after one github-pat, want 1", n)
	}
	first := r.exprs[ruleIndex(t, "github-pat")].re
	r.String(secret)
	if again := r.exprs[ruleIndex(t, "github-pat")].re; again != first {
		t.Fatal("the github-pat expression was compiled twice")
	}
}

func ruleIndex(t *testing.T, kind string) int {
	t.Helper()
	for i, ru := range rules {
		if ru.kind == kind {
			return i
		}
	}
	t.Fatalf("no rule %q", kind)
	return -1
}
