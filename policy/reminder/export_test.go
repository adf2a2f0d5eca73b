package reminder

// Chains returns how many agents have a chain, for the garbage-collection test.
func (r *Reminder) Chains() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.chains)
}
