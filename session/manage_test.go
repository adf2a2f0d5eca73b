package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/content"
)

// createWith stores a session with the given id and cwd holding events.
func createWith(t *testing.T, s *FileStore, id, cwd string, events ...Event) {
	t.Helper()
	l, err := s.Create(context.Background(), Header{ID: id, Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if _, err := l.AppendDurable(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestResolve(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Options{})
	for _, id := range []string{"20261201T103900Z-aaaa0001", "20261201T103900Z-aaaa0002", "20261201T110000Z-bbbb0001", "abc"} {
		createWith(t, s, id, "/w", TurnStart{Turn: 1}.Event())
	}
	tests := []struct {
		in, want string
		err      string
	}{
		{in: "20261201T1100", want: "20261201T110000Z-bbbb0001"},
		{in: "20261201T103900Z-aaaa0002", want: "20261201T103900Z-aaaa0002"},
		{in: "abc", want: "abc"},
		{in: "20261201T1039", err: `session id "20261201T1039" is ambiguous: it matches 20261201T103900Z-aaaa0001, 20261201T103900Z-aaaa0002`},
		{in: "2026", err: `is ambiguous: it matches 20261201T103900Z-aaaa0001, 20261201T103900Z-aaaa0002, 20261201T110000Z-bbbb0001`},
		{in: "2025", err: `session "2025": session: not found`},
		{in: "", err: "empty session id"},
	}
	for _, tt := range tests {
		got, err := s.Resolve(ctx, tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Resolve(%q) = %q, %v; want error %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	var amb *AmbiguousError
	if _, err := s.Resolve(ctx, "2026"); !errors.As(err, &amb) || len(amb.Candidates) != 3 {
		t.Errorf("Resolve(2026) error %v is not an AmbiguousError with 3 candidates", err)
	}
	if _, err := s.Resolve(ctx, "zzz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve(zzz) = %v, want ErrNotFound", err)
	}
}

func TestAmbiguousErrorShortensLongLists(t *testing.T) {
	e := &AmbiguousError{Prefix: "x", Candidates: []string{"x1", "x2", "x3", "x4", "x5", "x6", "x7"}}
	if got, want := e.Error(), `session id "x" is ambiguous: it matches x1, x2, x3, x4, x5 and 2 more`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRemove(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Options{})
	createWith(t, s, "one", "/w", TurnStart{Turn: 1}.Event())
	createWith(t, s, "two", "/w", TurnStart{Turn: 1}.Event())
	if err := s.Remove(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, "one"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load after Remove = %v, want ErrNotFound", err)
	}
	if _, err := s.Load(ctx, "two"); err != nil {
		t.Errorf("the other session is gone: %v", err)
	}
	if err := s.Remove(ctx, "one"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Remove = %v, want ErrNotFound", err)
	}
	// A session open for writing is refused.
	l, err := s.Resume(ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, "two"); err == nil || !strings.Contains(err.Error(), `session "two" is in use`) {
		t.Errorf("Remove of an open session = %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, "two"); err != nil {
		t.Fatal(err)
	}
	// The emptied project directory went with the last session.
	entries, err := os.ReadDir(s.Root())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("the store root still holds %v", entries)
	}
}

func TestCheckWritable(t *testing.T) {
	s := openStore(t, Options{})
	if err := s.CheckWritable("/some/project"); err != nil {
		t.Fatalf("writable store: %v", err)
	}
	if os.Geteuid() == 0 {
		// root writes through permission bits; a file in the way makes the root unusable.
		blocked := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(blocked, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		bad := &FileStore{root: filepath.Join(blocked, "sessions"), opts: s.opts}
		if err := bad.CheckWritable("/some/project"); err == nil || !strings.Contains(err.Error(), "session directory is not writable") {
			t.Errorf("CheckWritable under a file = %v", err)
		}
		return
	}
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	bad := &FileStore{root: filepath.Join(ro, "sessions"), opts: s.opts}
	if err := bad.CheckWritable("/some/project"); err == nil || !strings.Contains(err.Error(), "not writable") {
		t.Errorf("CheckWritable in a read-only directory = %v", err)
	}
}

func TestSummarize(t *testing.T) {
	h := Header{ID: "x", CreatedAt: 5, Cwd: "/a"}
	user := func(text, kind string) Event {
		return UserMessage{Message: content.Message{Role: content.RoleUser, Source: &content.Source{Kind: kind}, Content: content.Texts(text)}}.Event()
	}
	withTime := func(e Event, ms int64) Event { e.Time = ms; return e }
	tests := []struct {
		name   string
		events []Event
		want   Summary
	}{
		{"empty", nil, Summary{Cwd: "/a", Updated: 5}},
		{"one completed turn", []Event{
			TurnStart{Turn: 1}.Event(), user("  fix the bug \n", "user"),
			TurnEnd{Turn: 1, Reason: EndReason{Kind: EndCompleted}}.Event(),
		}, Summary{FirstPrompt: "fix the bug", Turns: 1, LastEnd: EndReason{Kind: EndCompleted}, Cwd: "/a", Updated: 5, Messages: 1}},
		{"context before the prompt, a move, an open turn", []Event{
			TurnStart{Turn: 1}.Event(), user("a reminder", "context"), user("first", "user"), user("second", "user"),
			TurnEnd{Turn: 1, Reason: EndReason{Kind: EndAborted}}.Event(),
			withTime(WorkspaceMoved{From: "/a", To: "/b"}.Event(), 90),
			TurnStart{Turn: 2}.Event(),
		}, Summary{FirstPrompt: "first", Turns: 2, Cwd: "/b", Updated: 90, Messages: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(h, tt.events)
			if got.FirstPrompt != tt.want.FirstPrompt || got.Turns != tt.want.Turns || got.LastEnd.Kind != tt.want.LastEnd.Kind ||
				got.Cwd != tt.want.Cwd || got.Updated != tt.want.Updated || got.Messages != tt.want.Messages {
				t.Errorf("Summarize = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestWorkspaceMovedIsLogged(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, Options{})
	createWith(t, s, "m", "/a", TurnStart{Turn: 1}.Event(), WorkspaceMoved{From: "/a", To: "/b"}.Event())
	l, err := s.Load(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	if got := Summarize(l.Header, l.Events).Cwd; got != "/b" {
		t.Errorf("cwd after a move = %q", got)
	}
	if _, err := DeriveMessages(l.Events); err != nil {
		t.Errorf("the move event disturbs the history: %v", err)
	}
}
