package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/session/pgstore"
	"github.com/jackc/pgx/v5"
)

// TestLeaseTakeover: a writer that stops renewing (a crashed process) holds its session
// until the lease lapses; then another resumes it, and the first writer's next batch is
// refused, since it would append at a seq the new writer filled.
func TestLeaseTakeover(t *testing.T) {
	c := newClock()
	url := pg.Database(t)
	a := openPG(t, url, c.Now)
	b := openPG(t, url, c.Now) // another process
	wa, err := a.Create(t.Context(), session.Header{ID: "l1", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	defer wa.Close()
	for _, e := range turnEvents() {
		if _, err := wa.AppendDurable(e); err != nil {
			t.Fatal(err)
		}
	}
	c.Advance(leaseTTL - time.Second)
	if _, err := b.Resume(t.Context(), "l1"); !errors.Is(err, session.ErrConflict) || !strings.Contains(err.Error(), "lease runs until") {
		t.Fatalf("Resume within the lease = %v, want ErrConflict naming the lease", err)
	}
	c.Advance(2 * time.Second) // the lease has lapsed
	wb, err := b.Resume(t.Context(), "l1")
	if err != nil {
		t.Fatalf("Resume after the lease lapsed: %v", err)
	}
	if wb.Len() != 9 { // 5 events and 4 recovery events
		t.Errorf("resumed Len = %d, want 9", wb.Len())
	}
	// The old writer wakes up: its append is refused and nothing it wrote is lost.
	if _, err := wa.AppendDurable(session.ToolCall{Turn: 1, Step: 0, CallID: "c2", Name: "bash", Arguments: `{"command":"ls"}`}.Event()); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("append by the writer that lost the lease = %v, want ErrConflict", err)
	}
	if _, err := wb.AppendDurable(session.TurnStart{Turn: 2}.Event()); err != nil {
		t.Fatalf("append by the new writer: %v", err)
	}
	if err := wb.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := b.Load(t.Context(), "l1")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Events) != 10+1 || l.Events[9].Type != session.TypeTurnStart {
		t.Errorf("loaded %d events (want 10 stored + the open turn 2 closed), event 9 %s", len(l.Events), l.Events[9].Type)
	}
	// Close releases the lease: the session can be resumed at once.
	w, err := b.Resume(t.Context(), "l1")
	if err != nil {
		t.Fatalf("Resume after Close: %v", err)
	}
	w.Close()
}

// TestSeqConflict: two writers that both believe they hold the session (the second took
// over a lapsed lease while the first kept running) cannot both append at the same seq.
func TestSeqConflict(t *testing.T) {
	c := newClock()
	url := pg.Database(t)
	st := openPG(t, url, c.Now)
	w1, err := st.Create(t.Context(), session.Header{ID: "q", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	defer w1.Close()
	if _, err := w1.AppendDurable(session.TurnStart{Turn: 1}.Event()); err != nil {
		t.Fatal(err)
	}
	c.Advance(leaseTTL + time.Second)
	w2, err := st.Resume(t.Context(), "q")
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	c.Advance(leaseTTL + time.Second) // w2's lease lapses too; w1 may retake it but not the seq
	if _, err := w2.AppendDurable(session.StepStart{Turn: 1, Step: 0}.Event()); err != nil {
		t.Fatal(err)
	}
	_, err = w1.AppendDurable(session.StepStart{Turn: 1, Step: 0}.Event())
	if !errors.Is(err, session.ErrConflict) || !strings.Contains(err.Error(), "expected to append at seq 1") {
		t.Fatalf("the second append at seq 1 = %v, want ErrConflict naming the seq", err)
	}
}

func TestOpenErrors(t *testing.T) {
	tests := []struct{ name, url, want string }{
		{"not a URL", "/var/lib/sessions", "is not a postgres:// URL"},
		{"bad URL", "postgres://u:secret@host:notaport/db", "parse"},
		// A port nobody listens on: the server is down.
		{"server down", "postgres://u:secret@127.0.0.1:1/db?connect_timeout=5", "connect to postgres://u:xxxxx@127.0.0.1:1/db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pgstore.Open(t.Context(), tt.url, pgstore.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open(%q) = %v, want an error containing %q", tt.url, err, tt.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

func TestMigrationIdempotent(t *testing.T) {
	url := pg.Database(t)
	for range 3 {
		openPG(t, url, nil)
	}
	if pgstore.SchemaVersion != 1 {
		t.Errorf("SchemaVersion = %d", pgstore.SchemaVersion)
	}
}

func TestImportErrors(t *testing.T) {
	c := newClock()
	st := pgStore(t, c.Now)
	var good bytes.Buffer
	src := fileStore(t, c.Now)
	write(t, src, c, session.Header{ID: "g", Cwd: "/w"}, closedTurn(1))
	if err := session.Export(t.Context(), src, "g", &good); err != nil {
		t.Fatal(err)
	}
	log := good.String()
	nl := strings.IndexByte(log, '\n')
	tests := []struct{ name, data, want string }{
		{"empty", "", "empty or header-less"},
		{"not a log", "hello\nworld\n", "corrupt log"},
		{"damaged middle", log[:nl+1] + "{garbage\n" + log[nl+1:], "damaged line"},
		{"torn tail", log[:len(log)-5], "damaged or incomplete record"},
		{"seq gap", log[:nl+1] + strings.SplitAfter(log[nl+1:], "\n")[1], "seq gap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := session.Import(t.Context(), st, strings.NewReader(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Import = %v, want an error containing %q", err, tt.want)
			}
			if infos, _ := st.List(t.Context()); len(infos) != 0 {
				t.Errorf("a refused import stored %d sessions", len(infos))
			}
		})
	}
	if _, err := session.Import(t.Context(), st, strings.NewReader(log)); err != nil {
		t.Fatalf("import of the intact log: %v", err)
	}
}

// TestLoadWhileWriting: a session loaded while its writer commits batches always reads
// whole batches, never a count that disagrees with its rows.
func TestLoadWhileWriting(t *testing.T) {
	c := newClock()
	st := pgStore(t, c.Now)
	w, err := st.Create(t.Context(), session.Header{ID: "live", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.AppendDurable(session.TurnStart{Turn: 1}.Event()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for i := range 200 {
			if _, err := w.AppendDurable(session.StepStart{Turn: 1, Step: i}.Event()); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		if _, err := st.Load(t.Context(), "live"); err != nil {
			t.Fatalf("Load during writes: %v", err)
		}
	}
}

// TestCorruptRows: damage in the tables is reported with the session and the seq, and a
// listing still shows the damaged session.
func TestCorruptRows(t *testing.T) {
	tests := []struct{ name, sql, want string }{
		{"bad payload", `UPDATE dsh_events SET payload = 'not json' WHERE seq = 1`, `session "d" in postgres://`},
		{"payload of another seq", `UPDATE dsh_events SET payload = (SELECT payload FROM dsh_events WHERE seq = 3) WHERE seq = 2`, "corrupt at event seq 2: the payload says seq 3"},
		{"missing row", `DELETE FROM dsh_events WHERE seq = 4`, "corrupt at event seq 5: seq gap: expected seq 4, got 5"},
		{"bad header", `UPDATE dsh_sessions SET header = '{"type":"session"}'`, "has a corrupt header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			url := pg.Database(t)
			st := openPG(t, url, c.Now)
			write(t, st, c, session.Header{ID: "d", Cwd: "/w"}, closedTurn(1))
			conn, err := pgx.Connect(t.Context(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			tx, err := conn.Begin(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background())
			if _, err := tx.Exec(t.Context(), tt.sql); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(t.Context()); err != nil {
				t.Fatal(err)
			}
			_, err = st.Load(t.Context(), "d")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load = %v, want an error containing %q", err, tt.want)
			}
			infos, err := st.List(t.Context())
			if err != nil || len(infos) != 1 {
				t.Fatalf("List = %v, %v", infos, err)
			}
			if header := strings.Contains(tt.want, "header"); (infos[0].Err != nil) != header {
				t.Errorf("List's Info.Err = %v, want it set only for a bad header", infos[0].Err)
			}
		})
	}
}

// TestLeaseRenewal: every batch and every Renew extend the lease, so a writer that keeps
// working is never taken over; one that lost its lease learns it from Renew.
func TestLeaseRenewal(t *testing.T) {
	c := newClock()
	st := openPG(t, pg.Database(t), c.Now)
	w, err := st.Create(t.Context(), session.Header{ID: "r", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.(*pgstore.Log).Renew(t.Context()); err != nil {
		t.Fatalf("Renew before the first batch: %v", err)
	}
	if _, err := w.AppendDurable(session.TurnStart{Turn: 1}.Event()); err != nil {
		t.Fatal(err)
	}
	c.Advance(leaseTTL * 2 / 3)
	if _, err := w.AppendDurable(session.StepStart{Turn: 1}.Event()); err != nil { // renews
		t.Fatal(err)
	}
	c.Advance(leaseTTL * 2 / 3) // past the first lease, within the renewed one
	if w2, err := st.Resume(t.Context(), "r"); !errors.Is(err, session.ErrConflict) {
		if err == nil {
			w2.Close()
		}
		t.Fatalf("Resume after a renewing batch = %v, want ErrConflict", err)
	}
	if err := w.(*pgstore.Log).Renew(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.Advance(leaseTTL * 2 / 3)
	if w2, err := st.Resume(t.Context(), "r"); !errors.Is(err, session.ErrConflict) {
		if err == nil {
			w2.Close()
		}
		t.Fatalf("Resume after Renew = %v, want ErrConflict", err)
	}
	c.Advance(leaseTTL)
	w2, err := st.Resume(t.Context(), "r")
	if err != nil {
		t.Fatalf("Resume after the lease lapsed: %v", err)
	}
	defer w2.Close()
	if err := w.(*pgstore.Log).Renew(t.Context()); !errors.Is(err, session.ErrConflict) {
		t.Errorf("Renew of a lease another writer took = %v, want ErrConflict", err)
	}
}
