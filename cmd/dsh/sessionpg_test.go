package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/pgtest"
	"github.com/dsh-go/dsh/session"
)

// pg is the PostgreSQL server of the session store tests, started on first use.
var pg = pgtest.New()

// TestSessionsInPostgres: with sessions.store set (here through DSH_SESSIONS_STORE),
// dsh run writes its session to PostgreSQL and dsh session ls, show, export, import, rm
// and run --resume work against it; a session moves to the file store and back
// byte-for-byte.
func TestSessionsInPostgres(t *testing.T) {
	s := newSandbox(t)
	url := pg.Database(t)
	s.env["DSH_SESSIONS_STORE"] = url
	s.write("a.txt", "alpha\n")
	sc := writeScript(t,
		`{"toolCalls":[{"id":"c1","name":"read","arguments":{"file_path":"a.txt"}}]}`,
		`{"text":"a.txt says alpha"}`)
	r := s.dsh("run", "--script", sc, "what does a.txt say?").want(t, 0)
	id, _ := sessionID(t, r.stderr)
	if _, err := os.Stat(filepath.Join(s.home, "sessions")); err == nil {
		t.Errorf("a session directory was written although the store is PostgreSQL")
	}

	ls := s.dsh("session", "ls").want(t, 0)
	mustContain(t, "ls", ls.stdout, id, "completed", "what does a.txt say?")
	show := s.dsh("session", "show", id[:12]).want(t, 0)
	mustContain(t, "show", show.stdout, "what does a.txt say?", "a.txt says alpha")

	// Export from PostgreSQL, import into a file store, export again: the same bytes.
	out := filepath.Join(t.TempDir(), "s.jsonl")
	s.dsh("session", "export", "--out", out, id).want(t, 0)
	fromPG, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	r = s.dsh("session", "export", "--out", out, id).want(t, 1)
	mustContain(t, "export onto a file", r.stderr, "exists already")
	dir := filepath.Join(t.TempDir(), "files")
	r = s.dsh("session", "import", "--store", "", "--sessions-dir", dir, out).want(t, 0)
	mustContain(t, "import", r.stdout, "imported session "+id+" into "+dir)
	r = s.dsh("session", "export", "--store", "", "--sessions-dir", dir, id).want(t, 0)
	if !bytes.Equal([]byte(r.stdout), fromPG) {
		t.Errorf("the file store's export differs from PostgreSQL's:\n%s\n---\n%s", r.stdout, fromPG)
	}
	// The file store's own log file imports too (file → PostgreSQL), into a fresh database.
	files, err := session.Open(dir, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := files.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	other := pg.Database(t)
	r = s.dsh("session", "import", "--store", other, loaded.Path).want(t, 0)
	r = s.dsh("session", "export", "--store", other, id).want(t, 0)
	if !bytes.Equal([]byte(r.stdout), fromPG) {
		t.Errorf("the zstd file imported into PostgreSQL exports differently")
	}

	// Error paths: an id that exists, a corrupt file, a session that does not exist.
	r = s.dsh("session", "import", out).want(t, 1)
	mustContain(t, "import twice", r.stderr, "already exists")
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, bytes.Replace(fromPG, []byte(`"seq":1,`), []byte(`"seq":7,`), 1), 0o600)
	r = s.dsh("session", "import", bad).want(t, 1)
	mustContain(t, "corrupt import", r.stderr, "seq gap")
	r = s.dsh("session", "show", "20260101T000000Z-00000000").want(t, 1)
	mustContain(t, "show a missing id", r.stderr, `no session "20260101T000000Z-00000000" in postgres://`)

	// The conversation goes on in the database.
	r = s.dsh("run", "--resume", id, "--script", writeScript(t, `{"text":"still alpha"}`), "and now?").want(t, 0)
	mustContain(t, "resume", r.stderr, "session "+id, "— turn 2 completed")
	r = s.dsh("session", "rm", id).want(t, 0)
	mustContain(t, "rm", r.stdout, "removed "+id)
	ls = s.dsh("session", "ls", "--all").want(t, 0)
	if strings.Contains(ls.stdout, id) {
		t.Errorf("ls after rm still lists %s:\n%s", id, ls.stdout)
	}
}

// TestSessionStoreErrors: a bad URL and a server that is down fail with what is wrong and
// without the password; a project file may not choose the store.
func TestSessionStoreErrors(t *testing.T) {
	s := newSandbox(t)
	r := s.dsh("session", "ls", "--store", "postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=5").want(t, 1)
	mustContain(t, "server down", r.stderr, "connect to postgres://u:xxxxx@127.0.0.1:1/db")
	r = s.dsh("session", "ls", "--store", "mysql://x").want(t, 2)
	mustContain(t, "not postgres", r.stderr, "sessions.store must be a postgres:// URL")
	for _, out := range []string{r.stdout, r.stderr} {
		if strings.Contains(out, "hunter2") {
			t.Errorf("the password is shown: %s", out)
		}
	}
	s.write(".dsh/config.yaml", "sessions:\n  store: postgres://evil.example/db\n")
	r = s.dsh("session", "ls").want(t, 1)
	mustContain(t, "project file", r.stderr, `"sessions.store" may be set only in the user configuration`)
}
