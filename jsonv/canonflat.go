package jsonv

// appendFlatCanonical appends the canonical form of a non-empty object of at most maxFlat
// members whose values are all scalars — what most tool-call arguments are, and what a
// policy keying calls by their canonical arguments encodes on every call — exactly as the
// general encoder writes it, but without the encoder, its container stack and its
// ancestry, so nothing is allocated beyond dst's growth. The members are written in
// canonical order through a table of their indexes on the stack; the object is not
// changed. It reports false, having appended nothing meaningful, for anything else or
// anything invalid: the general encoder then decides, and reports the error.
func appendFlatCanonical(b []byte, o *Object) ([]byte, bool) {
	ms := o.members
	if len(ms) == 0 || len(ms) > maxFlat {
		return b, false
	}
	if _, dup := duplicateName(o); dup {
		return b, false
	}
	// Insertion sort of the member indexes: at most maxFlat of them, usually already in
	// order (one comparison each).
	var order [maxFlat]uint8
	for i := range ms {
		j := i
		for ; j > 0 && compareCanonical(ms[order[j-1]].Name, ms[i].Name) > 0; j-- {
			order[j] = order[j-1]
		}
		order[j] = uint8(i)
	}
	start := len(b)
	b = append(b, '{')
	for k := range ms {
		m := &ms[order[k]]
		if k > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendQuote(b, m.Name); !ok {
			return b[:start], false
		}
		b = append(b, ':')
		if b, ok = appendScalar(b, m.Value); !ok {
			return b[:start], false
		}
	}
	return append(b, '}'), true
}
