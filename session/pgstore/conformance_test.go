package pgstore_test

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/session/pgstore"
	"github.com/google/go-cmp/cmp"
)

// clock is a fake clock the tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.UnixMilli(1_780_000_000_000)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// storeKind opens one kind of store for a test.
type storeKind struct {
	name string
	open func(t *testing.T, now func() time.Time) session.Store
}

const leaseTTL = 30 * time.Second

func fileStore(t *testing.T, now func() time.Time) session.Store {
	s, err := session.Open(t.TempDir(), session.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pgStore(t *testing.T, now func() time.Time) session.Store {
	return openPG(t, pg.Database(t), now)
}

func openPG(t *testing.T, url string, now func() time.Time) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(t.Context(), url, pgstore.Options{Now: now, LeaseTTL: leaseTTL, RenewEvery: -1, WriteBatchMaxDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

var stores = []storeKind{{"file", fileStore}, {"postgres", pgStore}}

// turnEvents is a turn that stops in the middle: an assistant message asks for two tool
// calls; the first has a durable tool/call and no result, the second never started.
func turnEvents() []session.Event {
	m := content.Message{ID: "a1", Source: &content.Source{Kind: "model"}, Content: content.Texts("looking")}
	m.Content = append(m.Content, content.ToolCall("c1", "read", `{"path":"a.txt"}`), content.ToolCall("c2", "bash", `{"command":"ls"}`))
	return []session.Event{
		session.TurnStart{Turn: 1}.Event(),
		session.UserMessage{Message: content.Message{ID: "u1", Content: content.Texts("what is in a.txt? ünïcode ✓")}}.Event(),
		session.StepStart{Turn: 1, Step: 0}.Event(),
		session.AssistantMessage{Turn: 1, Step: 0, Message: m}.Event(),
		session.ToolCall{Turn: 1, Step: 0, CallID: "c1", Name: "read", Arguments: `{"path":"a.txt"}`}.Event(),
	}
}

// closedTurn is a complete turn with a tool call and its result.
func closedTurn(turn int) []session.Event {
	m := content.Message{ID: "a", Source: &content.Source{Kind: "model"}}
	m.Content = append(m.Content, content.ToolCall("k", "read", `{"path":"b"}`))
	usage := jsonv.NewObject(jsonv.Member{Name: "inputTokens", Value: float64(1200)}, jsonv.Member{Name: "outputTokens", Value: float64(80)},
		jsonv.Member{Name: "cacheReadTokens", Value: float64(1000)}, jsonv.Member{Name: "reasoningTokens", Value: float64(30)})
	return []session.Event{
		session.TurnStart{Turn: turn}.Event(),
		session.UserMessage{Message: content.Message{ID: "u", Content: content.Texts("hello")}}.Event(),
		session.StepStart{Turn: turn, Step: 0}.Event(),
		session.AssistantMessage{Turn: turn, Step: 0, Message: m, Usage: usage}.Event(),
		session.ToolCall{Turn: turn, Step: 0, CallID: "k", Name: "read", Arguments: `{"path":"b"}`}.Event(),
		session.ToolResult{Turn: turn, Step: 0, MessageID: "r", CallID: "k", Content: content.Texts("B"), SourceEventSeqs: []int64{4}}.Event(),
		session.StepEnd{Turn: turn, Step: 0}.Event(),
		session.TurnEnd{Turn: turn, Reason: session.EndReason{Kind: session.EndCompleted}}.Event(),
	}
}

// write creates session id holding events (live appends and, every third, durable ones),
// moving the clock between them, and closes the log.
func write(t *testing.T, st session.Store, c *clock, h session.Header, events []session.Event) {
	t.Helper()
	w, err := st.Create(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range events {
		c.Advance(time.Millisecond * 7)
		if i%3 == 2 {
			_, err = w.AppendDurable(e)
		} else {
			_, err = w.Append(e)
		}
		if err != nil {
			t.Fatalf("append %s: %v", e.Type, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// lines encodes events as the payload bytes a store keeps.
func lines(t *testing.T, events []session.Event) []string {
	t.Helper()
	out := make([]string, len(events))
	for i, e := range events {
		b, err := session.EncodeEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

// TestConformance runs the same scenarios against both stores and checks that they
// record the same bytes.
func TestConformance(t *testing.T) {
	got := map[string][]string{}
	for _, k := range stores {
		t.Run(k.name+"/append-load", func(t *testing.T) {
			c := newClock()
			st := k.open(t, c.Now)
			h := session.Header{ID: "s1", Cwd: "/work/project"}
			write(t, st, c, h, closedTurn(1))
			l, err := st.Load(t.Context(), "s1")
			if err != nil {
				t.Fatal(err)
			}
			if l.Recovered != 0 || len(l.Events) != 8 || l.Header.Cwd != "/work/project" || l.Header.CreatedAt != c.t.Add(-8*7*time.Millisecond).UnixMilli() {
				t.Fatalf("loaded %+v", l)
			}
			got[k.name+"/append"] = lines(t, l.Events)
			infos, err := st.List(t.Context())
			if err != nil || len(infos) != 1 || infos[0].Header.ID != "s1" || infos[0].Err != nil || infos[0].Size == 0 {
				t.Fatalf("List = %+v, %v", infos, err)
			}
			// A store that keeps a summary keeps Summarize's, its last end reduced to the kind.
			if sum := infos[0].Summary; sum != nil {
				want := session.Summarize(l.Header, l.Events)
				want.LastEnd = session.EndReason{Kind: want.LastEnd.Kind}
				if diff := cmp.Diff(want, *sum); diff != "" {
					t.Errorf("List's summary differs from Summarize (-want +got):\n%s", diff)
				}
				if sum.Tokens.Input != 1200 || sum.FirstPrompt != "hello" || sum.LastEnd.Kind != session.EndCompleted {
					t.Errorf("summary %+v", sum)
				}
			} else if k.name == "postgres" {
				t.Errorf("the PostgreSQL store keeps no summary")
			}
		})
		t.Run(k.name+"/recovery", func(t *testing.T) {
			c := newClock()
			st := k.open(t, c.Now)
			write(t, st, c, session.Header{ID: "r1", Cwd: "/w"}, turnEvents())
			l, err := st.Load(t.Context(), "r1")
			if err != nil {
				t.Fatal(err)
			}
			// c1 has a durable tool/call: outcome unknown; c2 never started; then the
			// open step and turn end.
			if l.Recovered != 4 {
				t.Fatalf("Recovered = %d, want 4", l.Recovered)
			}
			if want := session.RecoveryEvents(l.Events[:5]); !cmp.Equal(lines(t, want), lines(t, l.Events[5:])) {
				t.Errorf("recovery events differ from RecoveryEvents")
			}
			got[k.name+"/recovery-load"] = lines(t, l.Events)
			msgs, err := session.DeriveMessages(l.Events)
			if err != nil {
				t.Fatal(err)
			}
			w, err := st.Resume(t.Context(), "r1")
			if err != nil {
				t.Fatal(err)
			}
			if w.Len() != 9 || w.Durable() != 9 {
				t.Errorf("resumed log Len %d Durable %d, want 9 and 9", w.Len(), w.Durable())
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			again, err := st.Load(t.Context(), "r1")
			if err != nil {
				t.Fatal(err)
			}
			if again.Recovered != 0 || !cmp.Equal(lines(t, again.Events), got[k.name+"/recovery-load"]) {
				t.Errorf("after Resume: Recovered %d, events differ from the recovered load", again.Recovered)
			}
			msgs2, err := session.DeriveMessages(again.Events)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(msgs, msgs2); diff != "" {
				t.Errorf("DeriveMessages before and after Resume differ:\n%s", diff)
			}
			got[k.name+"/recovery-msgs"] = []string{mustJSON(t, msgs)}
		})
		t.Run(k.name+"/second-writer", func(t *testing.T) {
			c := newClock()
			st := k.open(t, c.Now)
			w, err := st.Create(t.Context(), session.Header{ID: "w1", Cwd: "/w"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if _, err := w.AppendDurable(session.TurnStart{Turn: 1}.Event()); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Create(t.Context(), session.Header{ID: "w1", Cwd: "/w"}); !errors.Is(err, session.ErrExists) {
				t.Errorf("second Create = %v, want ErrExists", err)
			}
			if w2, err := st.Resume(t.Context(), "w1"); !errors.Is(err, session.ErrConflict) {
				if err == nil {
					w2.Close()
				}
				t.Errorf("Resume while written = %v, want ErrConflict", err)
			}
			if err := st.Remove(t.Context(), "w1"); !errors.Is(err, session.ErrConflict) {
				t.Errorf("Remove while written = %v, want ErrConflict", err)
			}
		})
		t.Run(k.name+"/list-resolve-remove", func(t *testing.T) {
			c := newClock()
			st := k.open(t, c.Now)
			for _, id := range []string{"20261201T100000Z-aaaa", "20261201T100000Z-aabb", "20261202T000000Z-cccc"} {
				c.Advance(time.Second)
				write(t, st, c, session.Header{ID: id, Cwd: "/p/" + id[len(id)-4:]}, closedTurn(1))
			}
			infos, err := st.List(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, in := range infos {
				ids = append(ids, in.Header.ID)
			}
			if want := []string{"20261201T100000Z-aaaa", "20261201T100000Z-aabb", "20261202T000000Z-cccc"}; !cmp.Equal(ids, want) {
				t.Fatalf("List ids = %q, want %q", ids, want)
			}
			if id, err := st.Resolve(t.Context(), "20261202"); err != nil || id != "20261202T000000Z-cccc" {
				t.Errorf("Resolve(unique prefix) = %q, %v", id, err)
			}
			var amb *session.AmbiguousError
			if _, err := st.Resolve(t.Context(), "20261201T100000Z-aa"); !errors.As(err, &amb) || len(amb.Candidates) != 2 {
				t.Errorf("Resolve(ambiguous) = %v", err)
			}
			if _, err := st.Resolve(t.Context(), "nope"); !errors.Is(err, session.ErrNotFound) {
				t.Errorf("Resolve(none) = %v, want ErrNotFound", err)
			}
			if err := st.Remove(t.Context(), "20261201T100000Z-aabb"); err != nil {
				t.Fatal(err)
			}
			if err := st.Remove(t.Context(), "20261201T100000Z-aabb"); !errors.Is(err, session.ErrNotFound) {
				t.Errorf("second Remove = %v, want ErrNotFound", err)
			}
			if _, err := st.Load(t.Context(), "20261201T100000Z-aabb"); !errors.Is(err, session.ErrNotFound) {
				t.Errorf("Load of a removed session = %v, want ErrNotFound", err)
			}
			if infos, _ := st.List(t.Context()); len(infos) != 2 {
				t.Errorf("List after Remove has %d sessions, want 2", len(infos))
			}
		})
		t.Run(k.name+"/import-export", func(t *testing.T) {
			c := newClock()
			st := k.open(t, c.Now)
			write(t, st, c, session.Header{ID: "x1", Cwd: "/w", Client: "dsh call"}, append(closedTurn(1), turnEvents()[:3]...))
			var out bytes.Buffer
			if err := session.Export(t.Context(), st, "x1", &out); err != nil {
				t.Fatal(err)
			}
			got[k.name+"/export"] = []string{out.String()}
			if _, err := session.Import(t.Context(), st, bytes.NewReader(out.Bytes())); !errors.Is(err, session.ErrExists) {
				t.Errorf("importing an id that exists = %v, want ErrExists", err)
			}
			if err := session.Export(t.Context(), st, "missing", &out); !errors.Is(err, session.ErrNotFound) {
				t.Errorf("exporting a missing session = %v, want ErrNotFound", err)
			}
		})
	}
	// Both stores recorded the same bytes.
	for _, key := range []string{"append", "recovery-load", "recovery-msgs", "export"} {
		if diff := cmp.Diff(got["file/"+key], got["postgres/"+key]); diff != "" {
			t.Errorf("%s: the stores differ (-file +postgres):\n%s", key, diff)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	var b strings.Builder
	for _, m := range v.([]content.Message) {
		b.WriteString(m.ID + ":" + string(m.Role) + ";")
		for _, bl := range m.Content {
			b.WriteString(bl.Type + "|" + bl.Text + "|" + bl.ID + ";")
		}
	}
	return b.String()
}
