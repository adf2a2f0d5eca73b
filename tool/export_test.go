package tool

// LayerCount reports how many scoped layers the registry holds, so tests can check that an
// emptied layer is reclaimed (docs/behaviour.md §3.2).
func (r *Registry) LayerCount() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.layers)
}

// JSONSize is jsonSize, for the property test against jsonv.Marshal.
var JSONSize = jsonSize
