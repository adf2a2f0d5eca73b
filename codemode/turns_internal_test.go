package codemode

import (
	"context"
	"errors"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/internal/testwait"
)

func TestTurnsWait(t *testing.T) {
	var tr turns
	bg := context.Background()
	if ended := tr.wait(bg, bg, 0, func() { t.Error("number 0 parked") }); ended != nil {
		t.Fatalf("wait(0) ended by %v", ended)
	}
	// 2 waits for 0 and 1; releasing 1 first is not enough.
	parked := make(chan struct{})
	admitted := make(chan context.Context)
	go func() { admitted <- tr.wait(bg, bg, 2, func() { close(parked) }) }()
	testwait.Recv(t, parked, "a value on parked")
	tr.release(1)
	select {
	case <-admitted:
		t.Fatal("2 admitted while 0 is pending")
	default:
	}
	tr.release(0)
	if ended := testwait.Recv(t, admitted, "a value on admitted"); ended != nil {
		t.Fatalf("wait(2) ended by %v", ended)
	}
	if tr.next != 2 || len(tr.released) != 0 {
		t.Errorf("next %d, released %v", tr.next, tr.released)
	}

	// A number that never comes: the wait ends with the context that ended it.
	tests := []struct {
		name      string
		cancelRun bool
	}{{"run settled", true}, {"call context done", false}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, cancelCall := context.WithCancelCause(bg)
			run, cancelRun := context.WithCancelCause(bg)
			defer cancelCall(nil)
			defer cancelRun(nil)
			parked := make(chan struct{})
			ended := make(chan context.Context)
			go func() { ended <- tr.wait(call, run, 10, func() { close(parked) }) }()
			<-parked
			want := call
			if tt.cancelRun {
				want = run
				cancelRun(errors.New("over"))
			} else {
				cancelCall(errors.New("settled"))
			}
			if got := <-ended; got != want {
				t.Errorf("wait ended by %v, want %v", got, want)
			}
		})
	}
}

// Whatever order the numbers are released in, the turn passes to the lowest number not
// released yet, and out-of-order releases are forgotten once passed.
func TestTurnsReleaseProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 30).Draw(rt, "n")
		order := rapid.Permutation(seqs(n)).Draw(rt, "order")
		var tr turns
		done := make([]bool, n)
		for _, k := range order {
			tr.release(k)
			done[k] = true
			low := uint64(0)
			for low < uint64(n) && done[low] {
				low++
			}
			if tr.next != low {
				rt.Fatalf("after releasing %d: next %d, want %d", k, tr.next, low)
			}
			for r := range tr.released {
				if r <= tr.next {
					rt.Fatalf("released holds %d at or below next %d", r, tr.next)
				}
			}
		}
		if len(tr.released) != 0 || tr.moved != nil {
			rt.Fatalf("leftovers: released %v, moved %v", tr.released, tr.moved)
		}
	})
}

func seqs(n int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = uint64(i)
	}
	return s
}
