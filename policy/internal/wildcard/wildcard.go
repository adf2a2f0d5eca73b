// Package wildcard matches names against anchored "*" patterns, the pattern language of the
// policies' tool-name lists (repeat-tool-reminder include/exclude, permission rules): "*"
// matches any sequence of characters, including none, and every other character matches
// only itself — a "." is a literal dot, not a regular-expression wildcard.
package wildcard

import "strings"

// Match reports whether s matches pattern as a whole (the match is anchored at both ends).
// It runs in O(len(pattern)·len(s)) time at worst and allocates nothing.
func Match(pattern, s string) bool {
	// Classic greedy matching with one backtrack point: on a mismatch after a "*", let the
	// latest "*" absorb one more byte. Matching bytewise is exact for UTF-8 because a literal
	// multi-byte character can only match the same byte sequence.
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			mark++
			p, i = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// HasWildcard reports whether pattern contains a "*".
func HasWildcard(pattern string) bool { return strings.IndexByte(pattern, '*') >= 0 }

// Any reports whether some pattern in patterns matches s.
func Any(patterns []string, s string) bool {
	for _, p := range patterns {
		if Match(p, s) {
			return true
		}
	}
	return false
}
