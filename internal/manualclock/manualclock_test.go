package manualclock

import (
	"slices"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	c := New()
	var ran []int
	stop0 := c.AfterFunc(time.Second, func() { ran = append(ran, 0) })
	c.AfterFunc(2*time.Second, func() { ran = append(ran, 1) })
	c.AfterFunc(3*time.Second, func() { ran = append(ran, 2) })
	if got, want := c.Budgets(), []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("Budgets() = %v, want %v", got, want)
	}
	if !stop0() || stop0() {
		t.Error("stop: want true once, then false")
	}
	if c.Fire(0) {
		t.Error("Fire(0) after stop ran the timer")
	}
	if !c.Fire(1) || c.Fire(1) {
		t.Error("Fire(1): want true once, then false")
	}
	if n := c.Pending(); n != 1 {
		t.Errorf("Pending() = %d, want 1", n)
	}
	if n := c.FireAll(); n != 1 {
		t.Errorf("FireAll() = %d, want 1", n)
	}
	if n := c.FireAll(); n != 0 {
		t.Errorf("second FireAll() = %d, want 0", n)
	}
	if !slices.Equal(ran, []int{1, 2}) {
		t.Errorf("ran %v, want [1 2]", ran)
	}
}
