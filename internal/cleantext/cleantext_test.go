package cleantext_test

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/internal/cleantext"
)

func TestClean(t *testing.T) {
	tests := []struct {
		name, in, want string
		rep            cleantext.Report
	}{
		{"plain", "hello\n\tworld\n", "hello\n\tworld\n", cleantext.Report{}},
		{"empty", "", "", cleantext.Report{}},
		{"utf8", "héllo 世界\n", "héllo 世界\n", cleantext.Report{}},
		{"sgr colours", "\x1b[1;31merror\x1b[0m: x", "error: x", cleantext.Report{Escapes: 2}},
		{"osc title bel", "\x1b]0;pwned\x07after", "after", cleantext.Report{Escapes: 1}},
		{"osc hyperlink st", "\x1b]8;;https://e.x\x1b\\link\x1b]8;;\x1b\\", "link", cleantext.Report{Escapes: 2}},
		{"unterminated osc stops at line end", "\x1b]0;title\nnext", "\nnext", cleantext.Report{Escapes: 1}},
		{"osc ended by another escape", "\x1b]0;title\x1b[1mbold", "bold", cleantext.Report{Escapes: 2}},
		{"dcs", "\x1bP+q544e\x1b\\after", "after", cleantext.Report{Escapes: 1}},
		{"charset select", "\x1b(Bok", "ok", cleantext.Report{Escapes: 1}},
		{"lone esc", "a\x1b", "a", cleantext.Report{Escapes: 1}},
		{"c1 csi", "a\u009b31mb", "ab", cleantext.Report{Escapes: 1}},
		{"nul and bell escaped", "a\x00b\x07c", `a\x00b\x07c`, cleantext.Report{Controls: 2}},
		{"del", "a\x7fb", `a\x7fb`, cleantext.Report{Controls: 1}},
		{"c1 next line", "a\u0085b", `a\u0085b`, cleantext.Report{Controls: 1}},
		{"bidi override", "a\u202eb", `a\u202eb`, cleantext.Report{Controls: 1}},
		{"backspace overstrike", "N\bNA\bAM\bME\bE", "NAME", cleantext.Report{Controls: 4}},
		{"backspace at line start", "a\n\bb", "a\nb", cleantext.Report{Controls: 1}},
		{"progress flood", "  0%\r 50%\r100%\ndone\n", "100%\ndone\n", cleantext.Report{Overwrites: 1}},
		{"trailing cr keeps last text", "50%\r100%\r\nok", "100%\nok", cleantext.Report{Overwrites: 1}},
		{"crlf", "a\r\nb\r\n", "a\nb\n", cleantext.Report{Overwrites: 2}},
		{"escape inside progress", "\x1b[2K\r 10%\x1b[2K\r 90%", " 90%", cleantext.Report{Escapes: 2, Overwrites: 1}},
		{"escaped text is plain", `\x1b[31m`, `\x1b[31m`, cleantext.Report{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rep := cleantext.Clean(tt.in)
			if got != tt.want || rep != tt.rep {
				t.Errorf("Clean(%q) = %q, %+v; want %q, %+v", tt.in, got, rep, tt.want, tt.rep)
			}
			if rep.Changed() != (got != tt.in) {
				t.Errorf("Changed() = %v but the text changed: %v", rep.Changed(), got != tt.in)
			}
		})
	}
}

func TestBinary(t *testing.T) {
	ls, err := os.ReadFile("/bin/ls")
	if err != nil {
		t.Fatal(err)
	}
	// what a tool sees: the bytes decoded as UTF-8 with invalid sequences replaced
	text := strings.ToValidUTF8(string(ls), "\uFFFD")
	got, rep := cleantext.Clean(text)
	if !rep.Binary || !strings.HasPrefix(got, cleantext.BinaryPrefix) || !strings.Contains(got, " bytes, sha256 ") {
		t.Fatalf("Clean(/bin/ls) = %.200q, %+v; want a binary summary", got, rep)
	}
	if want := cleantext.Summary(text); got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	for _, in := range []string{strings.Repeat("\x00\x01\x02\x03", 8), strings.Repeat("\uFFFD", 30) + "abc", strings.Repeat("\x1b[31m\uFFFD", 40)} {
		if got, rep := cleantext.Clean(in); !rep.Binary || got != cleantext.Summary(in) {
			t.Errorf("Clean(%q) = %q, %+v; want the binary summary", in, got, rep)
		}
	}
	// one NUL in a page of text is escaped, not taken for binary
	page := strings.Repeat("ordinary line of text\n", 20) + "\x00"
	if got, rep := cleantext.Clean(page); rep.Binary || !strings.HasSuffix(got, `\x00`) {
		t.Errorf("a text with one NUL: %+v, ends %q", rep, got[len(got)-10:])
	}
}

// clean reports whether s holds no control character but "\n" and "\t", and no C1 or
// bidirectional control.
func clean(s string) bool {
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) ||
			(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return false
		}
	}
	return true
}

func check(t interface{ Fatalf(string, ...any) }, in string) {
	out, rep := cleantext.Clean(in)
	if !clean(out) {
		t.Fatalf("Clean(%q) = %q still holds control characters", in, out)
	}
	if !utf8.ValidString(out) {
		t.Fatalf("Clean(%q) = %q is not UTF-8", in, out)
	}
	again, rep2 := cleantext.Clean(out)
	if again != out || rep2.Changed() {
		t.Fatalf("not idempotent: Clean(%q) = %q, then %q (%+v)", in, out, again, rep2)
	}
	if rep.Changed() != (out != in) {
		t.Fatalf("Clean(%q) = %q: Changed() = %v", in, out, rep.Changed())
	}
}

func TestProperties(t *testing.T) {
	alphabet := []string{"a", "b", " ", "\n", "\t", "\r", "\x1b", "[", "]", "\\", "\x07", "\x00", "\b", "0", ";", "m", "P", "(", "é", "\u009b", "\u009c", "\u202e", "\uFFFD", "\x7f"}
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOf(rapid.SampledFrom(alphabet)).Draw(t, "parts")
		check(t, strings.Join(parts, ""))
	})
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "plain\n", "\x1b[31mred\x1b[0m", "\x1b]0;t\x07", "1%\r2%\r", "a\x00b", "N\bN", "\u009b1m", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		in = strings.ToValidUTF8(in, "\uFFFD") // tools hand over valid UTF-8 only
		check(t, in)
	})
}

// ordinary is 10 KB of typical command output: a directory listing and compiler messages.
var ordinary = func() string {
	var b strings.Builder
	for i := 0; b.Len() < 10240; i++ {
		b.WriteString("-rw-r--r-- 1 user staff  4096 Dec  1 11:45 internal/cleantext/file_" + strings.Repeat("x", i%7) + ".go\n")
		b.WriteString("ok  \tgithub.com/dsh-go/dsh/policy/redact\t0.412s\tcoverage: 91.2% of statements\n")
	}
	return b.String()[:10240]
}()

func BenchmarkClean(b *testing.B) {
	b.Run("ordinary10KB", func(b *testing.B) {
		b.SetBytes(int64(len(ordinary)))
		b.ReportAllocs()
		for b.Loop() {
			cleantext.Clean(ordinary)
		}
	})
	coloured := strings.ReplaceAll(ordinary, "ok", "\x1b[32mok\x1b[0m")
	b.Run("coloured10KB", func(b *testing.B) {
		b.SetBytes(int64(len(coloured)))
		b.ReportAllocs()
		for b.Loop() {
			cleantext.Clean(coloured)
		}
	})
}

// TestPlainByte: Clean leaves any text made only of plain bytes as it is, and for every
// other byte there is a text around it that Clean changes or that a byte sequence starting
// with it can make suspect (non-ASCII bytes start C1 controls, bidi controls and U+FFFD).
func TestPlainByte(t *testing.T) {
	var plain []byte
	for c := 0; c < 256; c++ {
		b := byte(c)
		if cleantext.PlainByte(b) {
			plain = append(plain, b)
			if out, rep := cleantext.Clean("a" + string(b) + "b"); out != "a"+string(b)+"b" || rep.Changed() {
				t.Errorf("Clean changes the plain byte %#x: %q, %+v", b, out, rep)
			}
			continue
		}
		if b < 0x80 {
			if out, _ := cleantext.Clean("a" + string(b) + "b"); out == "a"+string(b)+"b" {
				t.Errorf("byte %#x is not plain, but Clean leaves it alone", b)
			}
		}
	}
	if len(plain) != 0x7f-0x20+2 {
		t.Errorf("%d plain bytes, want the %d printable ASCII ones, \\n and \\t", len(plain), 0x7f-0x20+2)
	}
	rapid.Check(t, func(t *rapid.T) {
		s := string(rapid.SliceOf(rapid.SampledFrom(plain)).Draw(t, "s"))
		if out, rep := cleantext.Clean(s); out != s || rep.Changed() {
			t.Fatalf("cleantext.Clean(%q) = %q, %+v: a text of plain bytes changed", s, out, rep)
		}
	})
}
