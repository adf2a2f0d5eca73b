package term

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/jsonv"
)

// A large edit used to show its first 20 "-" lines and hide every "+": both sides must
// stay visible, with the counts in the header.
func TestLargeDiffShowsBothSides(t *testing.T) {
	var old, neu []string
	for i := range 60 {
		old = append(old, fmt.Sprintf("old line %d", i))
		neu = append(neu, fmt.Sprintf("new line %d", i))
	}
	o := strings.Join(old, "\n")
	out := Renderer{}.Result("edit", card.Result{Card: card.Diff, Title: "Edit big.go",
		Diffs: []card.FileDiff{{Path: "big.go", OldText: &o, NewText: strings.Join(neu, "\n")}}}, false)
	for _, want := range []string{"big.go modified +60 −60", "- old line 0", "+ new line 0", "more removed lines", "more added lines"} {
		if !strings.Contains(out, want) {
			t.Errorf("large diff card lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n > DefaultMaxLines+4 {
		t.Errorf("large diff card has %d lines, want at most %d:\n%s", n, DefaultMaxLines+4, out)
	}
}

// A command that exits non-zero or is killed is drawn as a failure (red ✗ and a red
// status), though its result is a success for the model.
func TestFailedCommandDrawnAsFailure(t *testing.T) {
	three, zero := 3, 0
	tests := []struct {
		name string
		c    card.Result
		fail bool
		head string
	}{
		{"exit 3", card.Result{Card: card.Terminal, ExitCode: &three, Output: "boom"}, true, "✗ bash · exit 3"},
		{"signal", card.Result{Card: card.Terminal, Signal: "SIGTERM"}, true, "✗ bash · killed by SIGTERM"},
		{"exit 0", card.Result{Card: card.Terminal, ExitCode: &zero, Output: "ok"}, false, "✓ bash · exit 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FailedCommand(tt.c); got != tt.fail {
				t.Fatalf("FailedCommand = %v, want %v", got, tt.fail)
			}
			plain := Renderer{}.Result("bash", tt.c, false)
			if !strings.HasPrefix(plain, tt.head+"\n") {
				t.Errorf("card starts %q, want %q", firstLine(plain), tt.head)
			}
			colour := Renderer{Color: true}.Result("bash", tt.c, false)
			red := strings.HasPrefix(colour, "\x1b[31m✗\x1b[0m \x1b[31m")
			if red != tt.fail {
				t.Errorf("coloured header red = %v, want %v: %q", red, tt.fail, firstLine(colour))
			}
		})
	}
}

// The approval preview shows what a call would do: the diff of an edit with its counts, the
// content of a write, a command and where it runs, the arguments of any other tool.
func TestPreview(t *testing.T) {
	old := "a\nb\n"
	tests := []struct {
		name string
		c    card.Call
		want []string
	}{
		{"edit", card.Call{Card: card.Diff, Title: "Edit f.go", Diffs: []card.FileDiff{{Path: "f.go", OldText: &old, NewText: "a\nc\n"}}},
			[]string{"● Edit f.go", "f.go modified +1 −1", "- b", "+ c"}},
		{"write", card.Call{Card: card.Diff, Title: "Write n.md", Diffs: []card.FileDiff{{Path: "n.md", NewText: "# hi\nthere\n"}}},
			[]string{"n.md created +2 −0", "+ # hi", "+ there"}},
		{"bash", card.Call{Card: card.Terminal, Title: "go test ./...", Description: "run the tests"},
			[]string{"● $ go test ./...", "in /work/ws", "run the tests"}},
		{"bash in a directory", card.Call{Card: card.Terminal, Title: "ls", Cwd: "sub"}, []string{"in /work/ws/sub"}},
		{"bash in an absolute directory", card.Call{Card: card.Terminal, Title: "ls", Cwd: "/tmp"}, []string{"in /tmp\n"}},
		{"other", card.Call{Card: card.Generic, Title: "mcp__x__y", RawInput: jsonv.NewObject(jsonv.Member{Name: "q", Value: "z"})}, []string{"● mcp__x__y", `"q": "z"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Renderer{}.Preview("tool", tt.c, "/work/ws")
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("preview lacks %q:\n%s", w, got)
				}
			}
		})
	}
}

// Whatever the change, a diff card states its true counts and shows at least one removed
// and one added line when there are any, within a bounded number of lines.
func TestDiffCardShowsBothSidesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		line := rapid.SampledFrom([]string{"a", "b", "c", "d", "e", "f"})
		old := rapid.SliceOfN(line, 0, 80).Draw(t, "old")
		neu := rapid.SliceOfN(line, 0, 80).Draw(t, "new")
		max := rapid.IntRange(1, 30).Draw(t, "maxLines")
		o := strings.Join(old, "\n")
		out := Renderer{MaxLines: max}.Result("edit", card.Result{Card: card.Diff,
			Diffs: []card.FileDiff{{Path: "f", OldText: &o, NewText: strings.Join(neu, "\n")}}}, false)
		added, removed := 0, 0
		for _, op := range Diff(lines(o), lines(strings.Join(neu, "\n"))) {
			switch op.Kind {
			case OpInsert:
				added++
			case OpDelete:
				removed++
			}
		}
		if want := fmt.Sprintf("f modified +%d −%d\n", added, removed); !strings.Contains(out, want) {
			t.Fatalf("header lacks %q:\n%s", want, out)
		}
		if added > 0 && !strings.Contains(out, "\n    + ") {
			t.Fatalf("no added line shown:\n%s", out)
		}
		if removed > 0 && !strings.Contains(out, "\n    - ") {
			t.Fatalf("no removed line shown:\n%s", out)
		}
		// The window, plus at most two kept lines with their separators and the final note.
		if body := strings.Count(out, "\n") - 2; body > max+5 {
			t.Fatalf("%d body lines for a window of %d:\n%s", body, max, out)
		}
	})
}
