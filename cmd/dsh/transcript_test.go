package main

import (
	"bytes"
	"flag"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
	"pgregory.net/rapid"
)

// testRegistry is a registry with the built-in tools, for presenting cards.
func testRegistry(t testing.TB) *tool.Registry {
	t.Helper()
	s := &sandbox{env: map[string]string{"DSH_HOME": t.TempDir()}}
	c, err := loadConfig(&env{getenv: func(k string) string { return s.env[k] }}, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := newRuntime(t.Context(), runtimeConfig{Workspace: t.TempDir(), Mode: tool.ModeBoth, Config: c.Config, NoMCP: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt.reg
}

// logged appends payload events to a memory log and returns them as logged.
func logged(t testing.TB, events ...session.Event) []session.Event {
	t.Helper()
	log := session.NewMemory(nil)
	for _, e := range events {
		if _, err := log.Append(e); err != nil {
			t.Fatalf("append %s: %v", e.Type, err)
		}
	}
	return log.Events()
}

var controls = regexp.MustCompile("[\x00-\x08\x0b-\x1f\x7f]")

// FuzzTranscript renders a call with arbitrary argument text to every built-in tool and
// an arbitrary result: presenters get hostile arguments, and nothing but text and
// newlines reaches a plain transcript.
func FuzzTranscript(f *testing.F) {
	for _, seed := range []struct{ name, args, text string }{
		{"read", `{"file_path":"a.txt","offset":2,"limit":3}`, "<path>a</path>"},
		{"bash", `{"command":"ls\u001b[2J","description":"x"}`, "out\n[exit code: 2]"},
		{"edit", `{"file_path":"a","old_string":"x","new_string":"y"}`, "ok"},
		{"run_code", `{"code":"return 1","description":"one"}`, "1"},
		{"glob", `{"pattern":`, "Error: invalid"},
		{"nope", `[]`, "\x1b]0;title\x07"},
	} {
		f.Add(seed.name, seed.args, seed.text, false)
	}
	reg := testRegistry(f)
	f.Fuzz(func(t *testing.T, name, args, text string, isError bool) {
		if name == "" {
			name = "x"
		}
		tc := session.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: name, Arguments: args}
		tr := session.ToolResult{Turn: 1, Step: 1, CallID: "c1", Content: content.Texts(text), IsError: isError, SourceEventSeqs: []int64{0}}
		log := session.NewMemory(nil)
		for _, e := range []session.Event{tc.Event(), tr.Event()} {
			if _, err := log.Append(e); err != nil {
				t.Skip("not a loggable call:", err) // invalid UTF-8 never reaches a log
			}
		}
		var out bytes.Buffer
		x := newTranscript(&out, term.Renderer{}, false, reg)
		for _, e := range log.Events() {
			x.event(e)
		}
		if s := out.String(); controls.MatchString(s) || !strings.HasSuffix(s, "\n") {
			t.Fatalf("transcript %q", s)
		}
	})
}

// TestParseArgsAnywhere checks that flags may come before, between or after the
// positional arguments, and that "--" makes everything after it positional.
func TestParseArgsAnywhere(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pos := rapid.SliceOfN(rapid.StringMatching(`[a-z{}":]{1,6}`), 0, 3).Draw(t, "positional")
		useJSON := rapid.Bool().Draw(t, "json")
		ws := rapid.StringMatching(`/[a-z]{1,5}`).Draw(t, "workspace")
		var flags [][]string
		if useJSON {
			flags = append(flags, []string{"--json"})
		}
		flags = append(flags, []string{"--workspace", ws})
		// Interleave the flags among the positional arguments.
		var args []string
		rest := slices.Clone(pos)
		for _, f := range flags {
			k := rapid.IntRange(0, len(rest)).Draw(t, "cut")
			args = append(args, rest[:k]...)
			args = append(args, f...)
			rest = rest[k:]
		}
		args = append(args, rest...)
		if rapid.Bool().Draw(t, "dashdash") {
			args = append(args, "--", "--json")
			pos = append(slices.Clone(pos), "--json")
		}
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		asJSON := fs.Bool("json", false, "")
		wsFlag := fs.String("workspace", "", "")
		got, err := parseArgs(fs, args)
		if err != nil {
			t.Fatalf("parseArgs(%q): %v", args, err)
		}
		if !slices.Equal(got, pos) && !(len(got) == 0 && len(pos) == 0) {
			t.Fatalf("parseArgs(%q) positional = %q, want %q", args, got, pos)
		}
		if *asJSON != useJSON || *wsFlag != ws {
			t.Fatalf("parseArgs(%q): json=%v workspace=%q", args, *asJSON, *wsFlag)
		}
	})
}

func BenchmarkTranscriptReplay(b *testing.B) {
	reg := testRegistry(b)
	var events []session.Event
	for i := range 50 {
		id := "c" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		events = append(events,
			session.ToolCall{Turn: 1, Step: 1, CallID: id, Name: "bash", Arguments: `{"command":"go test ./...","description":"Run the tests"}`}.Event(),
			session.ToolResult{Turn: 1, Step: 1, CallID: id, Content: content.Texts(strings.Repeat("ok  \tpkg\t0.1s\n", 20) + "[exit code: 1]"), SourceEventSeqs: []int64{int64(2 * i)}}.Event())
	}
	events = logged(b, events...)
	b.ReportAllocs()
	for b.Loop() {
		var out bytes.Buffer
		x := newTranscript(&out, term.Renderer{Color: true, Width: 100}, false, reg)
		for _, e := range events {
			x.event(e)
		}
	}
}
