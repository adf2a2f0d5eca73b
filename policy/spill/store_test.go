package spill_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/policy/spill"
)

func TestLocalStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	s := spill.NewLocalStore(dir)
	ctx := context.Background()
	seen := map[string]bool{}
	for i := range 3 {
		ref, err := s.SaveText(ctx, spill.SaveRequest{ToolName: "mcp__x/y", SuggestedName: "mcp__x/y.txt", Text: strings.Repeat("t", i)})
		if err != nil {
			t.Fatal(err)
		}
		if seen[ref.Locator] {
			t.Fatalf("locator %q reused", ref.Locator)
		}
		seen[ref.Locator] = true
		if filepath.Dir(ref.Locator) != dir || !strings.HasSuffix(ref.Locator, "-mcp__x~002Fy.txt") {
			t.Errorf("locator %q", ref.Locator)
		}
		if ref.Bytes != i || ref.RetrievalHint != spill.RetrievalHint {
			t.Errorf("ref %+v", ref)
		}
		info, err := os.Stat(ref.Locator)
		if err != nil {
			t.Fatal(err)
		}
		if runtime.GOOS != "windows" && info.Mode().Perm() != 0o600 {
			t.Errorf("file mode %v", info.Mode().Perm())
		}
	}
	if info, err := os.Stat(dir); err != nil || (runtime.GOOS != "windows" && info.Mode().Perm() != 0o700) {
		t.Errorf("directory: %v %v", info.Mode(), err)
	}

	// A relative directory is made absolute when the store is created.
	if got, _ := spill.NewLocalStore("rel").Dir(); !filepath.IsAbs(got) {
		t.Errorf("relative dir stays relative: %q", got)
	}
	os.Remove("rel")

	// A directory that cannot be created fails the save.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := spill.NewLocalStore(filepath.Join(file, "sub")).SaveText(ctx, spill.SaveRequest{SuggestedName: "x.txt"}); err == nil {
		t.Error("save under a file succeeded")
	}
	// A cancelled context fails the save.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.SaveText(cctx, spill.SaveRequest{SuggestedName: "x.txt"}); err == nil {
		t.Error("save with a cancelled context succeeded")
	}
}

func TestLocalStorePrivateDefault(t *testing.T) {
	s := spill.NewLocalStore("")
	d1, err := s.Dir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(d1)
	d2, _ := s.Dir()
	if d1 != d2 || !strings.HasPrefix(filepath.Base(d1), "dsh-spill-") {
		t.Errorf("private dirs %q %q", d1, d2)
	}
	if info, err := os.Stat(d1); err != nil || (runtime.GOOS != "windows" && info.Mode().Perm() != 0o700) {
		t.Errorf("private dir mode %v %v", info.Mode(), err)
	}
}

func TestEncodeName(t *testing.T) {
	for raw, want := range map[string]string{
		"":              "~",
		".":             "~002E",
		"..":            "~002E~002E",
		"...":           "...",
		"bash.txt":      "bash.txt",
		"a/b":           "a~002Fb",
		"~":             "~007E",
		"../etc/passwd": "..~002Fetc~002Fpasswd",
		"é":             "~00E9",
		"😀":             "~D83D~DE00",
		"a b\x00":       "a~0020b~0000",
	} {
		if got := spill.EncodeName(raw); got != want {
			t.Errorf("EncodeName(%q) = %q, want %q", raw, got, want)
		}
	}
	if got := spill.EncodeName(strings.Repeat("/", 100)); len(got) != 120 {
		t.Errorf("long name encoded to %d bytes", len(got))
	}
}

func TestHeadTail(t *testing.T) {
	tests := []struct {
		text    string
		budget  int
		kept    string
		omitted int
	}{
		{"abc", 3, "abc", 0},
		{"abc", 10, "abc", 0},
		{"abcdef", 4, "abef", 2},
		{"abcdef", 3, "abf", 3},
		{"abcdef", 0, "", 6},
		{"ééé", 3, "é", 4},  // head 2 bytes = é, tail 1 byte = a continuation: dropped
		{"aéb", 2, "ab", 2}, // both cuts fall inside é
		{"😀x😀", 8, "😀😀", 1},
		{"😀x😀", 6, "", 9}, // both halves cut inside a 4-byte character
	}
	for _, tt := range tests {
		kept, omitted := spill.HeadTail(tt.text, tt.budget)
		if kept != tt.kept || omitted != tt.omitted {
			t.Errorf("HeadTail(%q, %d) = %q, %d; want %q, %d", tt.text, tt.budget, kept, omitted, tt.kept, tt.omitted)
		}
	}
}

// TestHeadTailProperties checks the invariants of the preview for any valid text and budget.
func TestHeadTailProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.StringOf(rapid.SampledFrom([]rune{'a', 'b', 'é', '€', '😀', '\n'})).Draw(t, "text")
		budget := rapid.IntRange(0, len(text)+4).Draw(t, "budget")
		kept, omitted := spill.HeadTail(text, budget)
		if !utf8.ValidString(kept) {
			t.Fatalf("kept %q is not valid UTF-8", kept)
		}
		if len(text) <= budget {
			if kept != text || omitted != 0 {
				t.Fatalf("fitting text changed: %q, %d", kept, omitted)
			}
			return
		}
		if len(kept) > budget {
			t.Fatalf("kept %d bytes over budget %d", len(kept), budget)
		}
		if omitted != len(text)-len(kept) || omitted <= 0 {
			t.Fatalf("omitted %d, text %d, kept %d", omitted, len(text), len(kept))
		}
		// kept is a prefix of text followed by a suffix of text, each at most 3 bytes short
		// of its half.
		ok := false
		for i := 0; i <= len(kept); i++ {
			head, tail := kept[:i], kept[i:]
			if strings.HasPrefix(text, head) && strings.HasSuffix(text, tail) && len(head) <= (budget+1)/2 && len(tail) <= budget/2 &&
				len(head) >= (budget+1)/2-3 && len(tail) >= budget/2-3 {
				ok = true
				break
			}
		}
		if !ok {
			t.Fatalf("kept %q is not a head and a tail of %q within budget %d", kept, text, budget)
		}
	})
}

func BenchmarkPostExecuteOverCap(b *testing.B) {
	text := strings.Repeat("line of output\n", 10000) // 150 kB
	for b.Loop() {
		spill.HeadTail(text, 50000)
	}
}
