package approval

// Buffered returns how many lines read wait for a question, for the typed-ahead test.
func (t *Terminal) Buffered() int { return len(t.lines) }
