package term

import (
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
)

// sgr matches the renderer's own escapes: colours and erase-line.
var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// FuzzRenderUntrusted renders untrusted text in every card and checks that no control
// character other than newline and tab reaches the output, except the renderer's own
// colour sequences.
func FuzzRenderUntrusted(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[2J", "a\r\nb", "\x9b31m", "\xff\xfe", "\x1b]52;c;eA==\x07", "tab\there", "€\u0085"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, color bool) {
		r := Renderer{Color: color, Width: 40, MaxLines: 5}
		code := 1
		old := s
		outs := []string{
			r.Call(s, card.Call{Card: card.Generic, Title: s, RawInput: s, Content: content.Texts(s)}),
			r.Call(s, card.Call{Card: card.Terminal, Title: s, Description: s, Cwd: s}),
			r.Result(s, card.Result{Card: card.Generic, Title: s, Content: content.Texts(s)}, color),
			r.Result(s, card.Result{Card: card.Terminal, Output: s, ExitCode: &code, Signal: s}, false),
			r.Result(s, card.Result{Card: card.Read, Path: s, Offset: 1, TotalLines: 1, Lines: []card.ReadLine{{Number: 1, Text: s}}}, false),
			r.Result(s, card.Result{Card: card.Diff, Diffs: []card.FileDiff{{Path: s, OldText: &old, NewText: s + "\nmore"}}}, false),
			r.Result(s, card.Result{Card: card.Search, Shape: "matches", Files: []card.SearchFile{{Path: s, Matches: []card.SearchMatch{{LineNumber: 1, Line: s}}}}}, false),
			r.Result(s, card.Result{Card: card.Web, WebKind: "search", Sources: []card.WebSource{{URL: s, Title: s}}, Answer: s}, false),
		}
		for _, out := range outs {
			rest := sgr.ReplaceAllString(out, "")
			if !color && rest != out {
				t.Fatalf("plain rendering holds escapes: %q", out)
			}
			for _, c := range rest {
				if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f || c >= 0x80 && c < 0xa0 {
					t.Fatalf("control character %U reached the output: %q", c, out)
				}
			}
			if !strings.HasSuffix(out, "\n") {
				t.Fatalf("card does not end with a newline: %q", out)
			}
		}
	})
}

func BenchmarkResultRead(b *testing.B) {
	c := card.Result{Card: card.Read, Path: "/ws/main.go", Offset: 1, TotalLines: 200}
	for i := 1; i <= 200; i++ {
		c.Lines = append(c.Lines, card.ReadLine{Number: i, Text: "\tfmt.Println(\"a line of Go code\")"})
	}
	r := Renderer{Color: true, Width: 100}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Result("read", c, false)
	}
}
