package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxPublicName is the function-name budget of the model APIs dsh targets.
const maxPublicName = 64

// PublicToolName returns the model-facing name of tool raw on server (docs/behaviour.md §13):
// "mcp__<server>__<raw>" when that consists only of [A-Za-z0-9_-] and fits in 64
// characters; otherwise the invalid characters become "_", the name is cut to 51 characters
// and "_" plus the first 12 hex digits of SHA-256("<server>\x00<raw>") is appended. It is a
// pure function of the identity and distinct raw names never collide; the raw name is what
// goes on the wire.
func PublicToolName(server, raw string) string {
	joined := "mcp__" + server + "__" + raw
	// The reference replaces UTF-16 code units; a character outside the BMP is two units
	// there and so becomes two underscores.
	var b strings.Builder
	b.Grow(len(joined))
	clean := true
	for _, r := range joined {
		switch {
		case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r > 0xFFFF:
			b.WriteString("__")
			clean = false
		default:
			b.WriteByte('_')
			clean = false
		}
	}
	normalized := b.String()
	if clean && len(normalized) <= maxPublicName {
		return normalized
	}
	sum := sha256.Sum256([]byte(server + "\x00" + raw))
	hash := hex.EncodeToString(sum[:])[:12]
	// normalized is ASCII, so byte length equals the reference's UTF-16 length.
	return normalized[:min(len(normalized), maxPublicName-12-1)] + "_" + hash
}
