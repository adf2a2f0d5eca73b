package wildcard_test

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-go/dsh/policy/internal/wildcard"
	"pgregory.net/rapid"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "anything at all", true},
		{"read", "read", true},
		{"read", "read_image", false},
		{"read", "xread", false},
		{"read*", "read_image", true},
		{"*_read", "huge_read", true},
		{"*_read", "read", false},
		{"mcp__*", "mcp__github__create_issue", true},
		{"mcp__*", "mcp_", false},
		{"mcp__*__create*", "mcp__github__create_issue", true},
		{"mcp__*__create*", "mcp__github__delete_issue", false},
		{"a.b", "a.b", true},
		{"a.b", "axb", false}, // a dot is literal
		{"a+", "aa", false},   // so is every regular-expression metacharacter
		{"a+", "a+", true},
		{"(x)", "(x)", true},
		{"a**b", "ab", true},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
		{"é*", "été", true},
		{"*é", "café", true},
		{"caf?", "café", false}, // "?" is literal too
	}
	for _, tt := range tests {
		if got := wildcard.Match(tt.pattern, tt.s); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

// reference is the reference harness's matcher: escape regular-expression metacharacters,
// turn "*" into ".*", anchor.
func reference(pattern string) *regexp.Regexp {
	parts := strings.Split(pattern, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`(?s)^` + strings.Join(parts, ".*") + `$`)
}

// TestMatchProperties checks Match against the regular-expression construction the
// reference uses, and the invariants a pattern language must keep.
func TestMatchProperties(t *testing.T) {
	alphabet := rapid.SampledFrom([]rune{'a', 'b', '.', '*', '_', 'é', '\n', '+'})
	str := rapid.StringOfN(alphabet, 0, 12, -1)
	rapid.Check(t, func(t *rapid.T) {
		pattern := str.Draw(t, "pattern")
		s := strings.ReplaceAll(str.Draw(t, "s"), "*", "")
		got := wildcard.Match(pattern, s)
		if want := reference(pattern).MatchString(s); got != want {
			t.Fatalf("Match(%q, %q) = %v, regexp says %v", pattern, s, got, want)
		}
		// A pattern without "*" matches exactly itself.
		if !wildcard.HasWildcard(pattern) && got != (pattern == s) {
			t.Fatalf("literal pattern %q vs %q: %v", pattern, s, got)
		}
		// Every string matches itself, and "*" matches everything.
		if !wildcard.Match(s, s) || !wildcard.Match("*", s) {
			t.Fatalf("%q does not match itself or *", s)
		}
		// Prefix and suffix patterns.
		if k := rapid.IntRange(0, len(s)).Draw(t, "k"); true {
			if !wildcard.Match(s[:k]+"*", s) && isBoundary(s, k) {
				t.Fatalf("prefix %q* does not match %q", s[:k], s)
			}
			if !wildcard.Match("*"+s[k:], s) && isBoundary(s, k) {
				t.Fatalf("suffix *%q does not match %q", s[k:], s)
			}
		}
	})
}

func isBoundary(s string, k int) bool { return k == len(s) || (s[k]&0xC0) != 0x80 }

func TestAny(t *testing.T) {
	if wildcard.Any(nil, "x") {
		t.Error("Any(nil) matched")
	}
	if !wildcard.Any([]string{"a", "x*"}, "xyz") {
		t.Error("Any missed x*")
	}
}

func FuzzMatch(f *testing.F) {
	f.Add("mcp__*", "mcp__server__tool")
	f.Add("*a*b", "aab")
	f.Add("a.b", "axb")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if strings.Contains(s, "*") || !utf8.ValidString(pattern) || !utf8.ValidString(s) {
			return
		}
		if got, want := wildcard.Match(pattern, s), reference(pattern).MatchString(s); got != want {
			t.Fatalf("Match(%q, %q) = %v, regexp says %v", pattern, s, got, want)
		}
	})
}

func BenchmarkMatch(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		wildcard.Match("mcp__*__create*", "mcp__github__create_issue")
	}
}
