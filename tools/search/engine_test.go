package search

import (
	"bytes"

	"regexp"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

type hit struct {
	N    int
	Line string
}

// naiveGrep is the specification of the engine: split into lines, test each.
func naiveGrep(re *regexp.Regexp, text string) []hit {
	var out []hit
	if text == "" {
		return nil // an empty file has no lines
	}
	lines := strings.Split(text, "\n")
	if strings.HasSuffix(text, "\n") {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if re.MatchString(l) {
			out = append(out, hit{i + 1, l})
		}
	}
	return out
}

// fataler is the part of testing.TB and rapid.T the helpers need.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func engineGrep(t fataler, e *grepEngine, text string, bufSize int, oneByte bool) []hit {
	t.Helper()
	var out []hit
	buf := make([]byte, bufSize)
	var r = bytes.NewReader([]byte(text))
	var rd interface{ Read([]byte) (int, error) } = r
	if oneByte {
		rd = iotest.OneByteReader(r)
	}
	binary, err := e.scan(rd, &buf, func(n int, line []byte) error {
		out = append(out, hit{n, string(line)})
		return nil
	})
	if err != nil || binary {
		t.Fatalf("scan: binary=%v err=%v", binary, err)
	}
	return out
}

var patternParts = []string{
	"a", "b+", "^a", "b$", "a|b", `\s`, ".", `\bab`, "(?i)A", "^$", `a\nb`, `\Aa`, `b\z`,
	"[ab]{2}", "x*", `é`, `\r`, "(?s)a.b", "(?-m)^b", "^", "$", " ",
	"(ab|ba)+", "(?i:b)a", "(?i)ab", "(?i)k", "(?i)s", "a{2,}", "(a|)b", `\A|b`, "aé|b\\x20",
}

// TestEngineMatchesEveryLineExactly: the literal-prefiltered, chunked scan finds exactly the lines
// a line-by-line match finds, whatever the buffer size and read pattern.
func TestEngineMatchesEveryLineExactly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.StringOfN(rapid.SampledFrom([]rune{'a', 'b', 'A', 'B', '\n', '\r', ' ', 'é', 'x', 'k', 'K', '\u212a', 's', 'ſ'}), 0, 200, -1).Draw(t, "text")
		parts := rapid.SliceOfN(rapid.SampledFrom(patternParts), 1, 3).Draw(t, "parts")
		pattern := strings.Join(parts, "")
		re, err := regexp.Compile(pattern)
		if err != nil {
			t.Skip("invalid combination")
		}
		e, err := compileGrep(pattern)
		if err != nil {
			t.Fatal(err)
		}
		bufSize := rapid.IntRange(1, 64).Draw(t, "buf")
		oneByte := rapid.Bool().Draw(t, "oneByte")
		want := naiveGrep(re, text)
		got := engineGrep(t, e, text, bufSize, oneByte)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("pattern %q text %q (-naive +engine):\n%s", pattern, text, diff)
		}
	})
}

func FuzzGrepEngine(f *testing.F) {
	f.Add("hello", "say hello\nno\nhello again\n")
	f.Add("^$", "\n\n")
	f.Add(`\Aa`, "a\na\n")
	f.Add(`a\s+b`, "a\n b\nab")
	f.Add(`(?m)$`, "x\r\ny")
	f.Add("é", "caf\xe9\ncafé")
	f.Fuzz(func(t *testing.T, pattern, text string) {
		if strings.IndexByte(text, 0) >= 0 {
			return // a NUL makes the file binary
		}
		re, err := regexp.Compile(pattern)
		e, err2 := compileGrep(pattern)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("compile disagreement: %v vs %v", err, err2)
		}
		if err != nil {
			return
		}
		want := naiveGrep(re, text)
		for _, size := range []int{3, 4096} {
			if diff := cmp.Diff(want, engineGrep(t, e, text, size, false)); diff != "" {
				t.Fatalf("pattern %q text %q buf %d (-naive +engine):\n%s", pattern, text, size, diff)
			}
		}
	})
}

func TestEngineBinaryAndLongLines(t *testing.T) {
	e, _ := compileGrep("needle")
	buf := make([]byte, 16)
	binary, err := e.scan(strings.NewReader("needle\x00"), &buf, func(int, []byte) error {
		t.Fatal("a binary file produced a match")
		return nil
	})
	if !binary || err != nil {
		t.Errorf("binary = %v, %v", binary, err)
	}
	// A NUL after the first 8 KiB does not make a file binary.
	late := strings.Repeat("x\n", 5000) + "\x00needle\n"
	if got := engineGrep(t, e, late, 64, false); !cmp.Equal(got, []hit{{5001, "\x00needle"}}) {
		t.Errorf("late NUL: %v", got)
	}

	// A line longer than the buffer limit is matched on its head; numbering continues.
	e.maxLine = 32
	long := strings.Repeat("y", 20) + "needle" + strings.Repeat("z", 100) + "needle\nneedle two\n" + strings.Repeat("w", 100) + "needle\nlast needle"
	got := engineGrep(t, e, long, 8, false)
	want := []hit{{1, strings.Repeat("y", 20) + "needle" + strings.Repeat("z", 6)}, {2, "needle two"}, {4, "last needle"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("long lines (-want +got):\n%s", diff)
	}
}

func FuzzIgnoreFile(f *testing.F) {
	f.Add("*.log\n!keep.log\n/build\nvendor/\nlib/**\n", "lib/x", true)
	f.Add("a{b}\n\\#x\n\\!y\ntrailing\\ \n", "a{b}", false)
	f.Add("[", "x", false)
	f.Fuzz(func(t *testing.T, data, rel string, isDir bool) {
		file := parseIgnore("", []byte(data))
		s := (&ignoreStack{}).with(file)
		first := s.ignored(rel, isDir)
		if s.ignored(rel, isDir) != first {
			t.Fatal("ignored is not deterministic")
		}
		// A file whose every rule is negated can never ignore anything.
		neg := &ignoreFile{}
		for _, r := range file.rules {
			r.negate = true
			neg.rules = append(neg.rules, r)
		}
		if (&ignoreStack{}).with(neg).ignored(rel, isDir) {
			t.Fatalf("only negations ignored %q", rel)
		}
	})
}

func TestRequiredLiterals(t *testing.T) {
	tests := []struct {
		pattern string
		want    []string
	}{
		{"needle", []string{"needle"}},
		{`\bfoo\b`, []string{"foo"}},
		{"foo|bar", []string{"foo", "bar"}},
		{`(foo|bar)+\d`, []string{"foo", "bar"}},
		{`func \w+\(`, []string{"func "}},
		{`a\d+bcd`, []string{"bcd"}},
		{"x*", nil},
		{"(?i)todo", []string{"(?i)TODO"}},
		{"(?i)task", nil}, // s also folds to ſ, which ASCII folding would miss
		{"(?i)é", nil},
		{"foo|b*", nil},
		{"(foo)?bar", []string{"bar"}},
		{"a|b|c|d|e|f|g|h|i", nil}, // too many to scan for
	}
	for _, tt := range tests {
		e, err := compileGrep(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range e.literals {
			if l.fold {
				got = append(got, "(?i)"+l.text)
			} else {
				got = append(got, l.text)
			}
		}
		if !cmp.Equal(got, tt.want) {
			t.Errorf("literals of %q = %q, want %q", tt.pattern, got, tt.want)
		}
	}
}

func TestIndexFold(t *testing.T) {
	tests := []struct {
		s, lit string
		want   int
	}{
		{"say Hello", "HELLO", 4},
		{"hello", "HELLO", 0},
		{"nnnnnneedlE", "NEEDLE", 5},
		{"needl", "NEEDLE", -1},
		{"x: y", "X: Y", 0},
		{"", "A", -1},
		{"TODO: fix; todo: more", "todo:", 0},
		{"a-b a_b", "A_B", 4},
	}
	for _, tt := range tests {
		if got := indexFold([]byte(tt.s), tt.lit); got != tt.want {
			t.Errorf("indexFold(%q, %q) = %d, want %d", tt.s, tt.lit, got, tt.want)
		}
		if want := strings.Index(strings.ToLower(tt.s), strings.ToLower(tt.lit)); want != tt.want {
			t.Errorf("bad case %q %q: strings says %d", tt.s, tt.lit, want)
		}
	}
}

func FuzzIndexFold(f *testing.F) {
	f.Add("say Hello hello", "HELLO")
	f.Add("aaaa", "AA")
	f.Fuzz(func(t *testing.T, s, lit string) {
		if lit == "" {
			return
		}
		for _, c := range []byte(s + lit) {
			if c >= 0x80 {
				return // the finder is used for ASCII literals only
			}
		}
		want := strings.Index(strings.ToLower(s), strings.ToLower(lit))
		if got := indexFold([]byte(s), lit); got != want {
			t.Fatalf("indexFold(%q, %q) = %d, want %d", s, lit, got, want)
		}
	})
}
