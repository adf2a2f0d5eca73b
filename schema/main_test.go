package schema

import (
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestConcurrentValidate shares one Schema, and its pool of validators, between
// goroutines; run with -race.
func TestConcurrentValidate(t *testing.T) {
	s := compile(t, documentSchema)
	good := parse(t, string(document(5_000)))
	bad := parse(t, `{"records":[{"id":1.5,"name":"x","kind":"file","extra":1}]}`)
	want := []string{`"value.records[0].id" must be an integer`, `"value.records[0].extra" is not a declared property (additionalProperties: false)`}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := range 8 {
		wg.Go(func() {
			for range 20 {
				if i%2 == 0 {
					if vs := s.Validate(good, RootValue); vs != nil {
						errs <- vs[0]
						return
					}
				} else {
					vs := s.Validate(bad, RootValue)
					if len(vs) != 2 || vs[0] != want[0] || vs[1] != want[1] {
						errs <- "unexpected violations"
						return
					}
					if s.Valid(bad) {
						errs <- "bad value reported valid"
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
