package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// modelFunc is a local OpenAI-compatible endpoint whose every reply is computed from the
// request: the last tool message's content, and how many requests came before.
type modelFunc struct {
	t   *testing.T
	srv *httptest.Server
	mu  sync.Mutex
	n   int
}

func newModelFunc(t *testing.T, next func(n int, lastTool string) reply) *modelFunc {
	m := &modelFunc{t: t}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request body: %v", err)
		}
		last := ""
		if k := len(body.Messages); k > 0 && body.Messages[k-1].Role == "tool" {
			last = fmt.Sprint(body.Messages[k-1].Content)
		}
		m.mu.Lock()
		m.n++
		n := m.n
		m.mu.Unlock()
		rep := next(n, last)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range rep.events {
			fmt.Fprintf(w, "data: %s\n\n", e)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(func() {
		m.srv.CloseClientConnections()
		m.srv.Close()
		http.DefaultClient.CloseIdleConnections()
	})
	return m
}

var (
	policySpill = regexp.MustCompile(`Full formatted result stored at: (\S+)\. Use read with this absolute path`)
	bashSpill   = regexp.MustCompile(`\[output truncated; full output: (\S+)\]`)
)

// TestSpilledOutputIsReadable runs a model that prints more than every cap with bash, then
// reads both files the result names — the spill policy's copy of the result and the shell's
// copy of the whole stdout — with read, by absolute path, and finally tries to overwrite
// one. A resumed session can still read what it spilled.
func TestSpilledOutputIsReadable(t *testing.T) {
	s := newSandbox(t)
	base := t.TempDir()
	s.env["DSH_SPILL_DIR"] = base
	var policyPath, bashPath string
	var readPolicy, readBash, writeDenied string
	m := newModelFunc(t, func(n int, last string) reply {
		switch n {
		case 1:
			return toolReply("", "c1", "bash", `{"command":"seq 1 30000","description":"Print many numbers"}`)
		case 2:
			if m := policySpill.FindStringSubmatch(last); m != nil {
				policyPath = m[1]
			}
			if m := bashSpill.FindStringSubmatch(last); m != nil {
				bashPath = m[1]
			}
			return toolReply("", "c2", "read", fmt.Sprintf(`{"file_path":%q,"offset":2,"limit":2}`, policyPath))
		case 3:
			readPolicy = last
			return toolReply("", "c3", "read", fmt.Sprintf(`{"file_path":%q,"offset":30000}`, bashPath))
		case 4:
			readBash = last
			return toolReply("", "c4", "write", fmt.Sprintf(`{"file_path":%q,"content":"x"}`, bashPath))
		case 5:
			writeDenied = last
			return textReply("done")
		}
		return textReply("unexpected request")
	})
	r := s.dsh("run", "--base-url", m.srv.URL, "--allow", "bash(seq *)", "print and read").want(t, 0)
	id, _ := sessionID(t, r.stderr)

	dir := filepath.Join(base, "dsh-spill-"+id)
	if policyPath == "" || bashPath == "" {
		t.Fatalf("the bash result does not name both spill files (policy %q, bash %q)", policyPath, bashPath)
	}
	for _, p := range []string{policyPath, bashPath} {
		if filepath.Dir(p) != dir {
			t.Errorf("spill file %s is not in the session's spill directory %s", p, dir)
		}
	}
	if want := "<path>" + policyPath + "</path>\n<type>file</type>\n<content>\n2: "; !strings.HasPrefix(readPolicy, want) {
		t.Errorf("read of the spill policy's file = %q, want a prefix %q", readPolicy, want)
	}
	if want := "<path>" + bashPath + "</path>\n<type>file</type>\n<content>\n30000: 30000\n\n(End of file - total 30000 lines)\n</content>"; readBash != want {
		t.Errorf("read of the shell's file = %q, want %q", readBash, want)
	}
	if want := fmt.Sprintf("Error: cannot write %q: the path is in the read-only directory %q", bashPath, dir); writeDenied != want {
		t.Errorf("write to a spill file = %q, want %q", writeDenied, want)
	}
	if b, err := os.ReadFile(bashPath); err != nil || !strings.HasSuffix(string(b), "\n29999\n30000\n") {
		t.Errorf("the shell's spill file: %v", err)
	}

	// Resumed, the session reads the same files again.
	var again string
	m2 := newModelFunc(t, func(n int, last string) reply {
		if n == 1 {
			return toolReply("", "c5", "read", fmt.Sprintf(`{"file_path":%q,"offset":1,"limit":1}`, bashPath))
		}
		again = last
		return textReply("done")
	})
	s.dsh("run", "--base-url", m2.srv.URL, "--resume", id, "read it again").want(t, 0)
	if want := "<path>" + bashPath + "</path>\n<type>file</type>\n<content>\n1: 1\n"; !strings.HasPrefix(again, want) {
		t.Errorf("read after resume = %q, want a prefix %q", again, want)
	}
}

// TestSpillDirectory covers openSpillDir: a private directory per runtime, a named one per
// session reused on resume, and a planted directory refused.
func TestSpillDirectory(t *testing.T) {
	base := t.TempDir()
	a, err := openSpillDir(base, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := openSpillDir(base, "")
	if err != nil {
		t.Fatal(err)
	}
	if a == b || filepath.Dir(a) != base || filepath.Dir(b) != base {
		t.Errorf("private directories %s and %s", a, b)
	}
	s1, err := openSpillDir(base, "20250101T000000Z-0a1b2c3d")
	if err != nil {
		t.Fatal(err)
	}
	s2, err := openSpillDir(base, "20250101T000000Z-0a1b2c3d")
	if err != nil || s1 != s2 || s1 != filepath.Join(base, "dsh-spill-20250101T000000Z-0a1b2c3d") {
		t.Errorf("session directory %s, then %s (%v)", s1, s2, err)
	}
	for _, d := range []string{a, s1} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, mode %v, want 0700", d, err, fi.Mode())
		}
	}
	// An id that is no safe file name is encoded; a huge one is hashed.
	odd, err := openSpillDir(base, "../x")
	if err != nil || filepath.Dir(odd) != base {
		t.Errorf("id ../x: %s, %v", odd, err)
	}
	long, err := openSpillDir(base, strings.Repeat("é", 300))
	if err != nil || filepath.Dir(long) != base || len(filepath.Base(long)) > 64 {
		t.Errorf("long id: %s, %v", long, err)
	}
	// A directory someone else prepared, readable by others, or a link, is not used.
	open := filepath.Join(base, "dsh-spill-open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := openSpillDir(base, "open"); err == nil || !strings.Contains(err.Error(), "not a private directory") {
		t.Errorf("an open directory: %v", err)
	}
	if err := os.Symlink(a, filepath.Join(base, "dsh-spill-link")); err != nil {
		t.Fatal(err)
	}
	if _, err := openSpillDir(base, "link"); err == nil || !strings.Contains(err.Error(), "not a private directory") {
		t.Errorf("a symbolic link: %v", err)
	}
	// A configured base that does not exist yet is created.
	nested := filepath.Join(base, "x", "y")
	if d, err := openSpillDir(nested, ""); err != nil || filepath.Dir(d) != nested {
		t.Errorf("nested base: %s, %v", d, err)
	}
}
