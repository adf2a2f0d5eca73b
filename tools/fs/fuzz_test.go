package fs

import (
	"bytes"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// refWindow restates the reference's window algorithm over a whole decoded string, counting
// UTF-16 code units, as an oracle for the streaming builder.
func refWindow(data []byte, spec windowSpec) (lines []Line, total int, err error) {
	if bytes.IndexByte(data[:min(len(data), binarySample)], 0) >= 0 {
		return nil, 0, errBinary
	}
	if !utf8.Valid(data) {
		return nil, 0, errInvalidUTF8
	}
	s := strings.TrimPrefix(string(data), "\uFEFF")
	parts := strings.Split(s, "\n")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	lines = []Line{}
	outBytes, capped := 0, false
	for _, p := range parts {
		total++
		if capped || total < spec.offset || len(lines) >= spec.limit {
			continue
		}
		u := utf16.Encode([]rune(p))
		buf := u[:min(len(u), spec.maxLineLength+1)]
		if n := len(buf); n > 0 && buf[n-1] == '\r' {
			buf = buf[:n-1]
		}
		var text string
		if len(buf) > spec.maxLineLength {
			cut := buf[:spec.maxLineLength]
			if n := len(cut); n > 0 && cut[n-1] >= 0xD800 && cut[n-1] < 0xDC00 {
				cut = cut[:n-1] // Go strings cannot hold the lone high surrogate JavaScript keeps
			}
			text = string(utf16.Decode(cut)) + "... (line truncated to " + strconv.Itoa(spec.maxLineLength) + " chars)"
		} else {
			text = string(utf16.Decode(buf))
		}
		n := len(text)
		if len(lines) > 0 {
			n++
		}
		if outBytes+n > spec.maxBytes {
			capped = true
			continue
		}
		outBytes += n
		lines = append(lines, Line{Number: total, Text: text})
	}
	if !capped && spec.offset > total && !(total == 0 && spec.offset == 1) {
		return lines, total, errOffset
	}
	return lines, total, nil
}

// runBuilder feeds data to a window builder in chunks of the given size.
func runBuilder(data []byte, spec windowSpec, chunk int) ([]Line, int, error) {
	b := newWindowBuilder(spec)
	for len(data) > 0 {
		n := min(chunk, len(data))
		if err := b.Write(data[:n]); err != nil {
			return nil, 0, err
		}
		data = data[n:]
	}
	if err := b.finish(); err != nil {
		if errors.Is(err, errOffset) {
			return b.lines, b.total, err
		}
		return nil, 0, err
	}
	return b.lines, b.total, nil
}

// fataler is what checkers need of *testing.T and *rapid.T.
type fataler interface {
	Fatalf(format string, args ...any)
}

func checkWindow(t fataler, data []byte, spec windowSpec, chunk int) {
	wantLines, wantTotal, wantErr := refWindow(data, spec)
	lines, total, err := runBuilder(data, spec, chunk)
	if !errors.Is(err, wantErr) || (err == nil) != (wantErr == nil) {
		t.Fatalf("data %q spec %+v chunk %d: err %v, want %v", data, spec, chunk, err, wantErr)
	}
	if err != nil && !errors.Is(err, errOffset) {
		return
	}
	if total != wantTotal {
		t.Fatalf("data %q spec %+v chunk %d: total %d, want %d", data, spec, chunk, total, wantTotal)
	}
	if diff := cmp.Diff(wantLines, lines); diff != "" {
		t.Fatalf("data %q spec %+v chunk %d: lines (-want +got):\n%s", data, spec, chunk, diff)
	}
}

func FuzzWindow(f *testing.F) {
	f.Add([]byte("one\ntwo\r\nthree"), uint8(1), uint8(10), uint8(3), uint8(100), uint8(2))
	f.Add([]byte("\uFEFF\n\n"), uint8(1), uint8(1), uint8(1), uint8(1), uint8(1))
	f.Add([]byte("😀😀😀\r\nabc\rdef\n"), uint8(1), uint8(5), uint8(3), uint8(40), uint8(3))
	f.Add([]byte("a\x00b"), uint8(1), uint8(5), uint8(3), uint8(40), uint8(1))
	f.Add([]byte("\xe2\x82"), uint8(1), uint8(5), uint8(3), uint8(40), uint8(1))
	f.Add([]byte(""), uint8(2), uint8(5), uint8(3), uint8(40), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, offset, limit, maxLine, maxBytes, chunk uint8) {
		spec := windowSpec{offset: int(offset%8) + 1, limit: int(limit%8) + 1, maxLineLength: int(maxLine%12) + 1, maxBytes: int(maxBytes)}
		checkWindow(t, data, spec, int(chunk%16)+1)
	})
}

// TestWindowMatchesReference checks the streaming builder against the oracle on generated
// text with every kind of line ending, wide characters and chunk boundaries.
func TestWindowMatchesReference(t *testing.T) {
	piece := rapid.SampledFrom([]string{"a", "bc", "\n", "\r\n", "\r", "é", "€", "😀", "\uFEFF", " ", "xyz"})
	rapid.Check(t, func(t *rapid.T) {
		data := []byte(strings.Join(rapid.SliceOfN(piece, 0, 60).Draw(t, "pieces"), ""))
		spec := windowSpec{
			offset:        rapid.IntRange(1, 10).Draw(t, "offset"),
			limit:         rapid.IntRange(1, 10).Draw(t, "limit"),
			maxLineLength: rapid.IntRange(1, 8).Draw(t, "maxLineLength"),
			maxBytes:      rapid.IntRange(0, 80).Draw(t, "maxBytes"),
		}
		checkWindow(t, data, spec, rapid.IntRange(1, 9).Draw(t, "chunk"))
	})
}

// naiveReplace is the oracle of replaceLiteral: left-to-right, non-overlapping matches.
func naiveReplace(content, old, new string) (string, int) {
	if old == "" {
		return content, 0
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(content); {
		if strings.HasPrefix(content[i:], old) {
			b.WriteString(new)
			i += len(old)
			n++
			continue
		}
		b.WriteByte(content[i])
		i++
	}
	return b.String(), n
}

func FuzzReplaceLiteral(f *testing.F) {
	f.Add("alpha beta alpha", "alpha", "A", false)
	f.Add("aaaa", "aa", "b", true)
	f.Add("x\r\ny\n", "x\r\ny", "z", false)
	f.Add("abc", "\r\n", "", true)
	f.Fuzz(func(t *testing.T, content, old, new string, all bool) {
		content = normalizeEOL(content)
		got, err := replaceLiteral(content, old, new, all, "/f")
		want, n := naiveReplace(content, normalizeEOL(old), normalizeEOL(new))
		te := asCoded(err)
		switch {
		case normalizeEOL(old) == "" || n == 0:
			if te == nil || te.Code != CodeEditNotFound {
				t.Fatalf("err = %v, want FS_EDIT_NOT_FOUND", err)
			}
		case n > 1 && !all:
			if te == nil || te.Code != CodeAmbiguousEdit || !strings.Contains(te.Message, "matched "+strconv.Itoa(n)+" times") {
				t.Fatalf("err = %v, want FS_AMBIGUOUS_EDIT with %d matches", err, n)
			}
		default:
			if err != nil || got != want {
				t.Fatalf("replaceLiteral = %q, %v; want %q", got, err, want)
			}
		}
	})
}

// fuzzWorkspace builds a workspace holding directories, files and links inside, outside,
// dangling and looping, next to an outside directory.
func fuzzWorkspace(tb testing.TB) *Workspace {
	tb.Helper()
	base := tb.TempDir()
	root := filepath.Join(base, "ws")
	out := filepath.Join(base, "out")
	for _, d := range []string{root + "/a/b", out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	os.WriteFile(root+"/a/b/f.txt", []byte("f"), 0o644)
	os.WriteFile(out+"/secret", []byte("s"), 0o644)
	links := map[string]string{
		"a/up":        "..",
		"a/b/upup":    "../..",
		"a/b/out":     "../../../out",
		"abs":         out,
		"absin":       root + "/a",
		"a/self":      ".",
		"loop":        "loop",
		"dangle":      "a/missing/x",
		"dangleout":   "../out/new",
		"a/b/sideway": "../up/a/b/f.txt",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			tb.Fatal(err)
		}
	}
	ws, err := OpenWorkspace(root)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ws.Close() })
	return ws
}

// checkContained asserts Resolve's invariant for p: success yields a canonical path under the
// root with no ".." and no existing symbolic link on it; failure is a coded error.
func checkContained(t testing.TB, ws *Workspace, p string) {
	target, err := ws.Resolve("read", p)
	if err != nil {
		if te := asCoded(err); te == nil || !strings.HasPrefix(te.Code, "FS_") {
			t.Fatalf("Resolve(%q): uncoded error %v", p, err)
		}
		return
	}
	rel := target.Rel
	if rel == "" || path.IsAbs(rel) || rel != path.Clean(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
		t.Fatalf("Resolve(%q) = %q: not a clean relative path", p, rel)
	}
	cur := ws.real
	for _, c := range strings.Split(rel, "/") {
		if c == "." {
			continue
		}
		cur = filepath.Join(cur, c)
		fi, err := os.Lstat(cur)
		if err != nil {
			break // a missing tail: nothing further can be a link
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			t.Fatalf("Resolve(%q) = %q: %s is a symbolic link", p, rel, cur)
		}
	}
	if !strings.HasPrefix(filepath.Join(ws.real, rel)+"/", ws.real+"/") {
		t.Fatalf("Resolve(%q) = %q: outside the root", p, rel)
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a/b/f.txt", "a/up/a/b/upup/abs/secret", "a/b/out/secret", "abs", "absin/b/f.txt",
		"a/self/self/b", "loop", "dangle", "dangleout", "a/b/sideway", "../x", "/etc", "a/../..", "a//b/./f.txt", "", " ", "a\x00b"} {
		f.Add(s)
	}
	ws := fuzzWorkspace(f)
	f.Add(ws.dir + "/a/up/absin")
	f.Fuzz(func(t *testing.T, p string) {
		checkContained(t, ws, p)
	})
}

func TestResolveCanonical(t *testing.T) {
	ws := fuzzWorkspace(t)
	for p, want := range map[string]string{
		"a/b/f.txt":            "a/b/f.txt",
		"a/up/a/b/f.txt":       "a/b/f.txt",
		"absin/b/f.txt":        "a/b/f.txt",
		"a/self/self/b":        "a/b",
		"a/b/sideway":          "a/b/f.txt",
		"dangle":               "a/missing/x",
		"a/b/upup/new/file":    "new/file",
		".":                    ".",
		ws.dir:                 ".",
		ws.dir + "/a/up/absin": "a",
	} {
		target, err := ws.Resolve("read", p)
		if err != nil {
			t.Errorf("Resolve(%q): %v", p, err)
			continue
		}
		if target.Rel != want {
			t.Errorf("Resolve(%q).Rel = %q, want %q", p, target.Rel, want)
		}
	}
	for _, p := range []string{"a/b/out/secret", "abs", "a/up/abs/x", "dangleout", "../ws2"} {
		if _, err := ws.Resolve("read", p); asCoded(err) == nil || asCoded(err).Code != CodeSandboxDenied {
			t.Errorf("Resolve(%q): %v, want FS_SANDBOX_DENIED", p, err)
		}
	}
}
