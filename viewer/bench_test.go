package viewer_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

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
