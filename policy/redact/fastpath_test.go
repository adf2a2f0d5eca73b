package redact

import (
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestPropertyShortScan: for any text, the one-pass look for a searched-for byte that
// short texts get first finds exactly the secrets the full search finds — none of them
// missed, whether the text holds a rule's anchor, a whole secret, an environment value or
// only parts of them, and whatever its length around shortScan.
func TestPropertyShortScan(t *testing.T) {
	r := NewRedactor([]string{"GITHUB_TOKEN=Zx9vQ2mL7pK4", "DB_PASSWORD=hunter2hunter2!"})
	pieces := []string{
		"a", "hello ", "\n", "{\"text\": ", "J", "K", "B", "G", "A", "_", "-", "k", "Zx9", "hunter2",
		"AKIAIOSFODNN7EXAMPLE", "ghp_1234567890abcdefghijABCDEFGHIJ123456", "Zx9vQ2mL7pK4", "hunter2hunter2!",
		"sk-", "xoxb-", "eyJ", "-----BEGIN", strings.Repeat("x", 60),
	}
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.OneOf(rapid.SampledFrom(pieces), rapid.String()), 0, 8).Draw(t, "parts")
		s := strings.Join(parts, "")
		got, want := r.find(s, nil), r.findAll(s, nil)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("find(%q) = %v, the full search finds %v", s, got, want)
		}
	})
}

// TestShortScanBytes: every byte a rule's anchor or an environment value is searched by is
// one the short pass looks for.
func TestShortScanBytes(t *testing.T) {
	r := NewRedactor([]string{"GITHUB_TOKEN=Zx9vQ2mL7pK4"})
	for _, p := range r.probes {
		if !r.probed[p.b] {
			t.Errorf("probe byte %q is not looked for", p.b)
		}
	}
	for _, e := range r.env {
		if !r.probed[e.value[e.probe]] {
			t.Errorf("the byte %s is searched by (%q) is not looked for", e.kind, e.value[e.probe])
		}
	}
	if len(r.env) != 1 {
		t.Fatalf("%d environment secrets, want 1", len(r.env))
	}
	for _, s := range []string{"Zx9vQ2mL7pK4", "token AKIAIOSFODNN7EXAMPLE"} {
		if spans := r.find(s, nil); len(spans) == 0 {
			t.Errorf("find(%q) found nothing", s)
		}
	}
}

// TestPropertyPlainText: Text's one-pass answer for short plain texts is what cleaning and
// redacting them the full way returns — the text itself and an empty report — for any
// text, whether it holds control bytes, escape sequences, non-ASCII, probe bytes, secrets
// or environment values, and whatever its length around shortScan.
func TestPropertyPlainText(t *testing.T) {
	p := New(Config{Env: []string{"GITHUB_TOKEN=Zx9vQ2mL7pK4"}})
	pieces := []string{
		"a", "hello ", "\n", "\t", "\r", "\x00", "\x1b[31m", "\x7f", "é", "\u202e", "\x9b", "\xff",
		"{\"text\": ", "J", "K", "B", "G", "A", "_", "-", "k", "Zx9vQ2mL7pK4", "AKIAIOSFODNN7EXAMPLE",
		"ghp_1234567890abcdefghijABCDEFGHIJ123456", strings.Repeat("x", 60), strings.Repeat("y", 127),
	}
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.OneOf(rapid.SampledFrom(pieces), rapid.String()), 0, 6).Draw(t, "parts")
		s := strings.Join(parts, "")
		got, gotRep := p.Text(s)
		want, wantRep := p.textAll(s)
		if got != want || !reflect.DeepEqual(gotRep, wantRep) {
			t.Fatalf("Text(%q) = %q, %+v; the full way gives %q, %+v", s, got, gotRep, want, wantRep)
		}
		if p.red.plainText(s) && (want != s || wantRep.Changed()) {
			t.Fatalf("plain text %q: the full way changes it to %q (%v)", s, want, wantRep)
		}
	})
}

// TestPlainText: which texts take the one pass — short ones of printable ASCII, "\n" and
// "\t" without a byte the redactor searches for — and that the others still get cleaned
// and redacted.
func TestPlainText(t *testing.T) {
	p := New(Config{Env: []string{"GITHUB_TOKEN=Zx9vQ2mL7pK4"}})
	for _, tc := range []struct {
		text  string
		plain bool
		want  string
	}{
		{"", true, ""},
		{"{\n  \"text\": \"hello\"\n}", true, "{\n  \"text\": \"hello\"\n}"},
		{"tab\there", true, "tab\there"},
		{strings.Repeat("x", shortScan), true, strings.Repeat("x", shortScan)},
		{strings.Repeat("x", shortScan+1), false, strings.Repeat("x", shortScan+1)},
		{"café", false, "café"},
		{"a\rb", false, "b"},
		{"red \x1b[31mtext", false, "red text"},
		{"token Zx9vQ2mL7pK4", false, "token [REDACTED:env:GITHUB_TOKEN]"},
		{"key AKIAIOSFODNN7EXAMPLE", false, "key [REDACTED:aws-access-token]"},
	} {
		if got := p.red.plainText(tc.text); got != tc.plain {
			t.Errorf("plainText(%q) = %v, want %v", tc.text, got, tc.plain)
		}
		if got, _ := p.Text(tc.text); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}
