// Package suggest finds the intended word for a mistyped one: the "did you mean" of a
// command-line flag, subcommand or slash command.
package suggest

import "unicode/utf8"

// Closest returns the candidate nearest to word by edit distance (insertions, deletions,
// substitutions and transpositions of adjacent characters), or "" when none is near enough
// to be a plausible typo: at most one edit for words of up to four characters, two for
// longer ones. A candidate that word is a prefix of (at least two characters long) also
// counts. Ties go to the earlier candidate.
func Closest(word string, candidates []string) string {
	if word == "" {
		return ""
	}
	limit := 1
	if utf8.RuneCountInString(word) > 4 {
		limit = 2
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		if c == word {
			return c
		}
		d := Distance(word, c)
		if d < bestD {
			best, bestD = c, d
		}
	}
	if best != "" {
		return best
	}
	if utf8.RuneCountInString(word) >= 2 {
		for _, c := range candidates {
			if len(c) > len(word) && c[:len(word)] == word {
				return c
			}
		}
	}
	return ""
}

// Distance is the optimal-string-alignment edit distance between a and b, counted in
// runes: the fewest insertions, deletions, substitutions and adjacent transpositions that
// turn a into b.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rows suffice: the previous two and the current one.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
