package suggest

import (
	"testing"

	"pgregory.net/rapid"
)

func TestClosest(t *testing.T) {
	flags := []string{"json", "resume", "continue", "model", "mode", "max-steps", "max-tokens", "workspace"}
	tests := []struct{ word, want string }{
		{"mdoel", "model"},      // transposition
		{"modle", "model"},      // transposition
		{"jsno", "json"},        // short word, one edit
		{"contnue", "continue"}, // deletion
		{"resum", "resume"},     // deletion
		{"mode", "mode"},        // exact
		{"max-step", "max-steps"},
		{"work", "workspace"}, // prefix
		{"xyz", ""},
		{"verbose", ""},
		{"", ""},
		{"j", ""},
	}
	for _, tt := range tests {
		if got := Closest(tt.word, flags); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
}

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"ab", "ba", 1}, {"model", "mdoel", 1}, {"héllo", "hello", 1}, {"ca", "abc", 3},
	}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestDistanceProperties checks the metric's invariants on random strings.
func TestDistanceProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.StringN(0, 12, -1).Draw(t, "a")
		b := rapid.StringN(0, 12, -1).Draw(t, "b")
		d := Distance(a, b)
		if d != Distance(b, a) {
			t.Fatalf("not symmetric: %d vs %d", d, Distance(b, a))
		}
		if (d == 0) != (a == b) {
			t.Fatalf("Distance(%q, %q) = %d", a, b, d)
		}
		la, lb := len([]rune(a)), len([]rune(b))
		if d < max(la, lb)-min(la, lb) || d > max(la, lb) {
			t.Fatalf("Distance(%q, %q) = %d outside [%d, %d]", a, b, d, max(la, lb)-min(la, lb), max(la, lb))
		}
		if Closest(a, []string{a, b}) != a && a != "" {
			t.Fatalf("an exact candidate was not chosen")
		}
	})
}

func BenchmarkClosest(b *testing.B) {
	flags := []string{"json", "resume", "continue", "model", "mode", "max-steps", "max-tokens", "workspace", "base-url", "api-key-env", "sessions-dir"}
	b.ReportAllocs()
	for b.Loop() {
		Closest("contnue", flags)
	}
}
