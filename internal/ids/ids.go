// Package ids mints short random identifiers for messages and sessions.
package ids

import (
	"encoding/hex"
	"math/rand/v2"
)

// New returns prefix followed by 16 random hex digits, e.g. "msg_3f9a2c01d4e5b6a7".
// The identifiers are unique in practice, not secret.
func New(prefix string) string {
	var b [8]byte
	v := rand.Uint64()
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	out := make([]byte, len(prefix)+16)
	copy(out, prefix)
	hex.Encode(out[len(prefix):], b[:])
	return string(out)
}
