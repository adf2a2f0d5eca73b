package shell

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestRenderForeground(t *testing.T) {
	sig := func(s string) *string { return &s }
	tests := []struct {
		name string
		v    Foreground
		want string
	}{
		{"stdout", Foreground{ExitCode: ptr(0), Stdout: Stream{Text: "a\n"}}, "a\n"},
		{"nothing", Foreground{ExitCode: ptr(0)}, "(no output)"},
		{"stderr joins with one newline", Foreground{ExitCode: ptr(0), Stdout: Stream{Text: "a"}, Stderr: Stream{Text: "b"}}, "a\n[stderr]\nb"},
		{"exit code", Foreground{ExitCode: ptr(2), Stdout: Stream{Text: "a"}}, "a\n[exit code: 2]"},
		{"exit code after newline", Foreground{ExitCode: ptr(2), Stdout: Stream{Text: "a\n"}}, "a\n[exit code: 2]"},
		{"truncated with spill", Foreground{ExitCode: ptr(0), Stdout: Stream{Text: "tail", Truncated: true, SpillPath: "/s/out.log"}},
			"tail\n[output truncated; full output: /s/out.log]"},
		{"truncated without spill", Foreground{ExitCode: ptr(0), Stderr: Stream{Text: "tail\n", Truncated: true}},
			"[stderr]\ntail\n\n[output truncated; full output: (unavailable)]"},
		{"timeout and signal", Foreground{Signal: sig("SIGKILL"), TimedOut: true, TimeoutMs: 1500.5}, "(no output)\n[timed out after 1500.5ms]\n[killed by signal: SIGKILL]"},
		{"timeout then clean exit", Foreground{ExitCode: ptr(0), TimedOut: true, TimeoutMs: 100, Stdout: Stream{Text: "bye\n"}}, "bye\n[timed out after 100ms]"},
		{"sandbox denial", Foreground{ExitCode: ptr(1), Sandbox: &SandboxInfo{Mode: "workspace-write", Denied: true}, Stderr: Stream{Text: "Read-only file system\n"}},
			"[stderr]\nRead-only file system\n[sandbox: file access denied under workspace-write mode]\n[exit code: 1]"},
		{"sandbox without denial", Foreground{ExitCode: ptr(0), Sandbox: &SandboxInfo{Mode: "workspace-write"}}, "(no output)"},
	}
	for _, tt := range tests {
		if got := renderForeground(&tt.v); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func TestParseExitStatus(t *testing.T) {
	tests := []struct {
		text string
		want ExitStatus
	}{
		{"ok\n", ExitStatus{Body: "ok\n"}},
		{"x\n[exit code: 2]", ExitStatus{Body: "x", ExitCode: 2}},
		{"(no output)\n[timed out after 5ms]\n[killed by signal: SIGTERM]", ExitStatus{Body: "(no output)\n[timed out after 5ms]", Signal: "SIGTERM"}},
		{"[exit code: 2]", ExitStatus{Body: "[exit code: 2]"}},                   // no preceding newline: not a marker
		{"x\n[exit code: 2]\n", ExitStatus{Body: "x\n[exit code: 2]\n"}},         // not the last line
		{"x\n[exit code: -1]", ExitStatus{Body: "x\n[exit code: -1]"}},           // not a marker the renderer writes
		{"x\n[killed by signal: ]", ExitStatus{Body: "x\n[killed by signal: ]"}}, // empty name
	}
	for _, tt := range tests {
		if got := ParseExitStatus(tt.text); got != tt.want {
			t.Errorf("ParseExitStatus(%q) = %+v, want %+v", tt.text, got, tt.want)
		}
	}
}

// TestParseExitStatusInvertsRender: the exit status the card recovers from any rendered
// result is the one the command had.
func TestParseExitStatusInvertsRender(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := Foreground{
			Stdout:    Stream{Text: rapid.String().Draw(t, "stdout")},
			Stderr:    Stream{Text: rapid.String().Draw(t, "stderr")},
			TimedOut:  rapid.Bool().Draw(t, "timedOut"),
			TimeoutMs: float64(rapid.IntRange(1, 600000).Draw(t, "ms")),
		}
		var wantSignal string
		wantCode := 0
		if rapid.Bool().Draw(t, "signaled") {
			wantSignal = rapid.SampledFrom([]string{"SIGTERM", "SIGKILL", "SIGSEGV"}).Draw(t, "signal")
			v.Signal = &wantSignal
		} else {
			wantCode = rapid.IntRange(0, 255).Draw(t, "code")
			v.ExitCode = &wantCode
		}
		got := ParseExitStatus(renderForeground(&v))
		if got.Signal != wantSignal || got.ExitCode != wantCode {
			t.Fatalf("recovered %+v from %q, want signal %q code %d", got, renderForeground(&v), wantSignal, wantCode)
		}
	})
}

func FuzzParseExitStatus(f *testing.F) {
	for _, s := range []string{"ok", "x\n[exit code: 2]", "\n[killed by signal: SIGTERM]", "[exit code: 1]\n", "\n[exit code: 99999999999999999999]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st := ParseExitStatus(s)
		switch {
		case st.Signal != "":
			if st.Body+"\n[killed by signal: "+st.Signal+"]" != s {
				t.Fatalf("body and signal do not rebuild %q: %+v", s, st)
			}
		case st.Body != s:
			if st.Body+"\n[exit code: "+strconv.Itoa(st.ExitCode)+"]" != s && !strings.HasPrefix(s, st.Body+"\n[exit code: ") {
				t.Fatalf("body and code do not rebuild %q: %+v", s, st)
			}
		default:
			if st.ExitCode != 0 {
				t.Fatalf("no marker but exit code %d", st.ExitCode)
			}
		}
	})
}

func TestCollector(t *testing.T) {
	dir := t.TempDir()
	spillDir := func() (string, error) { return dir, nil }

	c := newCollector(10, 100, spillDir, "stdout")
	c.Write([]byte("hello"))
	if r := c.result(); r != (Stream{Text: "hello"}) {
		t.Errorf("under the cap: %+v", r)
	}
	c.Write([]byte(" world, this is long"))
	c.seal()
	r := c.result()
	if r.Text != "is is long" || !r.Truncated || r.SpillPath == "" {
		t.Fatalf("over the cap: %+v", r)
	}
	if data, _ := os.ReadFile(r.SpillPath); string(data) != "hello world, this is long" {
		t.Errorf("spill file = %q", data)
	}
	c.Write([]byte("after seal"))
	if c.result().Text != "is is long" {
		t.Error("a sealed collector changed")
	}

	// Past the spill cap the file is removed.
	c = newCollector(4, 8, spillDir, "stderr")
	c.Write([]byte("abcdef"))
	p := c.result().SpillPath
	c.Write([]byte("ghij"))
	if r := c.result(); r.SpillPath != "" || r.Text != "ghij" || !r.Truncated {
		t.Errorf("past the spill cap: %+v", r)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("the abandoned spill file %s still exists", p)
	}

	// A tail starting inside a character drops the partial character.
	c = newCollector(5, 0, nil, "stdout")
	c.Write([]byte("aaéééé")) // 10 bytes; the tail starts inside an é
	if r := c.result(); r.Text != "éé" {
		t.Errorf("cut character: %q", r.Text)
	}
}

func TestCollectorIncrementalReads(t *testing.T) {
	c := newCollector(8, 0, nil, "stdout")
	c.Write([]byte("abc"))
	r := c.readFrom(0)
	if r.text != "abc" || r.lossy || r.next != 3 {
		t.Fatalf("first read: %+v", r)
	}
	c.Write([]byte("d\xc3")) // an incomplete é is held back while the stream is open
	r = c.readFrom(r.next)
	if r.text != "d" || r.next != 4 {
		t.Fatalf("second read: %+v", r)
	}
	c.Write([]byte("\xa9xyz0123456789"))
	r = c.readFrom(r.next)
	if !r.lossy || r.text != "23456789" {
		t.Fatalf("lossy read: %+v", r)
	}
	c.seal()
	if r2 := c.readFrom(r.next); r2.text != "" || r2.lossy {
		t.Errorf("read at the end: %+v", r2)
	}
}

// TestCollectorKeepsTheTail: whatever the write sizes, the result is the last max bytes and
// the spill file holds the whole stream.
func TestCollectorKeepsTheTail(t *testing.T) {
	dir := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		max := rapid.IntRange(1, 64).Draw(t, "max")
		writes := rapid.SliceOf(rapid.SliceOfN(rapid.ByteRange('a', 'z'), 0, 200)).Draw(t, "writes")
		c := newCollector(max, 1<<20, func() (string, error) { return dir, nil }, "stdout")
		var all []byte
		for _, w := range writes {
			c.Write(w)
			all = append(all, w...)
		}
		c.seal()
		r := c.result()
		wantTail := all[len(all)-min(len(all), max):]
		if r.Text != string(wantTail) || r.Truncated != (len(all) > max) {
			t.Fatalf("result %+v, want tail %q of %d bytes", r, wantTail, len(all))
		}
		if r.Truncated {
			data, err := os.ReadFile(r.SpillPath)
			if err != nil || !bytes.Equal(data, all) {
				t.Fatalf("spill file holds %d bytes (%v), want %d", len(data), err, len(all))
			}
			os.Remove(r.SpillPath)
		} else if r.SpillPath != "" {
			t.Fatalf("a complete stream has a spill file")
		}
	})
}

func TestEnvironment(t *testing.T) {
	got := environment([]string{"PATH=/bin", "AWS_SECRET_ACCESS_KEY=x", "github_token=y", "DSH_X=z", "dsh_y=w", "TERM=xterm", "A=1=2", "BROKEN"},
		map[string]string{"EXTRA": "e", "PATH": "/custom"})
	want := []string{"A=1=2", "EXTRA=e", "GIT_PAGER=cat", "NO_COLOR=1", "PAGER=cat", "PATH=/custom", "TERM=dumb"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("environment = %q, want %q", got, want)
	}
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		in    string
		state byte
		pgrp  string
		ok    bool
	}{
		{"123 (bash) S 1 123 123 0", 'S', "123", true},
		{"9 (a (weird) name) Z 1 42 42", 'Z', "42", true},
		{"garbage", 0, "", false},
		{"1 (x) S", 0, "", false},
	}
	for _, tt := range tests {
		state, pgrp, ok := parseStat([]byte(tt.in))
		if state != tt.state || pgrp != tt.pgrp || ok != tt.ok {
			t.Errorf("parseStat(%q) = %c %q %v", tt.in, state, pgrp, ok)
		}
	}
}

func BenchmarkCollectorWrite(b *testing.B) {
	dir := b.TempDir()
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 2048) // 32 KiB, one pipe read
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	c := newCollector(DefaultMaxOutputBytes, 1<<62, func() (string, error) { return dir, nil }, "stdout")
	for b.Loop() {
		c.Write(chunk)
	}
	c.seal()
	os.Remove(c.result().SpillPath)
}

func BenchmarkRunEcho(b *testing.B) {
	r, err := NewRunner(Config{Root: b.TempDir(), SpillDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ReportAllocs()
	for b.Loop() {
		res, err := r.Run(b.Context(), Request{Command: "echo hi"})
		if err != nil || res.Stdout.Text != "hi\n" {
			b.Fatal(res, err)
		}
	}
}
