//go:build !race

// The race detector makes sync.Pool drop a random share of what is put in it, so allocation
// counts are checked only without it.

package contain

import "testing"

func TestRunnerAllocations(t *testing.T) {
	n := 0
	r := NewRunner(func(p *int) { *p++ })
	r.Call(&n) // warm
	if allocs := testing.AllocsPerRun(100, func() { r.Call(&n) }); allocs > 0 {
		t.Errorf("a warm Runner.Call makes %v allocations, want 0", allocs)
	}
}

func TestWorkersAllocations(t *testing.T) {
	forEachMode(t, func(t *testing.T, newWorkers func(int) (*Workers, error)) {
		ws, err := newWorkers(1)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		n := 0
		r := NewRunnerOn(ws, func(p *int) { *p++ })
		r.Call(&n) // warm
		if allocs := testing.AllocsPerRun(100, func() { r.Call(&n) }); allocs > 0 {
			t.Errorf("a warm Runner.Call on Workers makes %v allocations, want 0", allocs)
		}
	})
}
