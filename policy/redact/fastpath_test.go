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
