// Package manualclock is a clock for tests whose timers fire only when the test says so,
// so that a deadline expires at a chosen point of a call rather than after real time.
package manualclock

import (
	"sync"
	"time"
)

// Clock arms timers with AfterFunc (the shape tool.Deadline and the timeout policy take)
// and fires them on request. The zero value is not ready; use New.
type Clock struct {
	mu      sync.Mutex
	armed   map[int]func()
	next    int
	budgets []time.Duration
}

// New returns a clock with no timers armed.
func New() *Clock { return &Clock{armed: map[int]func(){}} }

// AfterFunc arms a timer that runs f when the test fires it; d is only recorded. stop
// disarms it and reports whether it was still armed.
func (c *Clock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next++
	c.armed[id] = f
	c.budgets = append(c.budgets, d)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.armed[id]
		delete(c.armed, id)
		return ok
	}
}

// Fire runs the timer armed id-th (0 first), if it is still armed, and reports whether
// it was.
func (c *Clock) Fire(id int) bool {
	c.mu.Lock()
	f, ok := c.armed[id]
	delete(c.armed, id)
	c.mu.Unlock()
	if ok {
		f()
	}
	return ok
}

// FireAll runs every armed timer, as if its budget had elapsed, and reports how many ran.
func (c *Clock) FireAll() int {
	c.mu.Lock()
	fs := make([]func(), 0, len(c.armed))
	for id, f := range c.armed {
		fs = append(fs, f)
		delete(c.armed, id)
	}
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
	return len(fs)
}

// Pending is how many timers are still armed.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.armed)
}

// Budgets returns the durations of every timer armed so far, in arming order.
func (c *Clock) Budgets() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.budgets...)
}
