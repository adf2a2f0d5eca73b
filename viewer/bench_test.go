package viewer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/viewer"
)

// BenchmarkSessionPage renders the fixture session's page: load, cards, template.
func BenchmarkSessionPage(b *testing.B) {
	store := newStore(b)
	id, _ := record(b, store, false)
	v, err := viewer.New(viewer.Options{Store: store, Definition: defs})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/session/"+id, nil)
	req.Host = "127.0.0.1:8377"
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		v.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// BenchmarkListPage shows the first list page of a store with 1,000 sessions: "cold" is
// a fresh viewer (it loads the 50 sessions of the page to summarize them), "warm" one
// that has shown the page before (it loads none: their logs did not change).
func BenchmarkListPage(b *testing.B) {
	store := newStore(b)
	const sessions = 1000
	for i := range sessions {
		h := session.Header{ID: fmt.Sprintf("20261201T100000Z-%08x", i), Cwd: "/work/app", CreatedAt: int64(1_780_000_000_000 + i), Version: session.FormatVersion}
		events := []session.Event{
			session.TurnStart{Turn: 1}.Event(),
			session.UserMessage{Message: content.Message{Content: content.Texts(fmt.Sprintf("task number %d", i))}}.Event(),
			session.AssistantMessage{Turn: 1, Step: 1, Message: content.Message{Content: content.Texts("done")}, Usage: map[string]any{"inputTokens": 100.0, "outputTokens": 10.0}}.Event(),
			session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}}.Event(),
		}
		for j := range events {
			events[j].Seq, events[j].Time = int64(j), h.CreatedAt+int64(j)
		}
		if err := store.Import(context.Background(), h, events); err != nil {
			b.Fatal(err)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Host = "127.0.0.1:8377"
	page := func(b *testing.B, v *viewer.Server) {
		w := httptest.NewRecorder()
		v.ServeHTTP(w, req)
		if w.Code != 200 || !strings.Contains(w.Body.String(), "task number 999") {
			b.Fatalf("status %d", w.Code)
		}
	}
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, err := viewer.New(viewer.Options{Store: store})
			if err != nil {
				b.Fatal(err)
			}
			page(b, v)
		}
	})
	b.Run("warm", func(b *testing.B) {
		v, err := viewer.New(viewer.Options{Store: store})
		if err != nil {
			b.Fatal(err)
		}
		page(b, v)
		b.ReportAllocs()
		for b.Loop() {
			page(b, v)
		}
	})
}
