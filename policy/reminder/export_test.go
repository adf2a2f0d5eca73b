package reminder

// Chains returns how many agents have a chain, for the garbage-collection test.
func (r *Reminder) Chains() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.chains)
}

// Cached reports whether the reminder still holds a last-advanced chain, for the
// garbage-collection test.
func (r *Reminder) Cached() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last.chain != nil
}
