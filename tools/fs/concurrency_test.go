package fs

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentEditsBySameOwner runs edits of one file by one owner at once (as a Code Mode
// program or a direct caller might): each sees the previous one's observation, so all apply.
// (A read racing with them may record an older view; the next edit then fails stale, which
// is the policy failing closed, so reads are left out here.)
func TestConcurrentEditsBySameOwner(t *testing.T) {
	e := newEnv(t, Config{})
	const n = 16
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf("m%02d", i))
	}
	e.put("shared.txt", strings.Join(lines, "\n")+"\n")
	mustOK(t, e.call("read", `{"file_path":"shared.txt"}`))
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Go(func() {
			res := e.reg.Execute(t.Context(), toolInput(fmt.Sprint("e", i), "edit", fmt.Sprintf(`{"file_path":"shared.txt","old_string":"m%02d","new_string":"M%02d"}`, i, i)))
			if res.IsError {
				errs <- res.Error.Message
			}
		})
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
	if got, want := e.get("shared.txt"), strings.ToUpper(strings.Join(lines, "\n"))+"\n"; got != want {
		t.Errorf("file = %q, want %q", got, want)
	}
	noTemps(t, e.dir)
}
