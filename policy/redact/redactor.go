package redact

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dsh-go/dsh/internal/cleantext"
)

// MarkerPrefix starts every redaction marker: "[REDACTED:<kind>]".
const MarkerPrefix = "[REDACTED:"

// Marker returns the text that replaces a secret of the given kind.
func Marker(kind string) string { return MarkerPrefix + kind + "]" }

// EnvKindPrefix starts the kind of a secret found as the value of an environment variable:
// "env:GITHUB_TOKEN".
const EnvKindPrefix = "env:"

// MinEnvSecretLen is the shortest environment value redacted: shorter values ("1", "true",
// a port) would redact ordinary text.
const MinEnvSecretLen = 8

// Counts is how many secrets of each kind were redacted.
type Counts map[string]int

// Total returns the number of secrets redacted.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// add adds o into c (allocating c when needed) and returns it.
func (c Counts) add(o Counts) Counts {
	if len(o) == 0 {
		return c
	}
	if c == nil {
		c = Counts{}
	}
	for k, v := range o {
		c[k] += v
	}
	return c
}

// String lists the counts as "kind×n, …" in kind order, for notices.
func (c Counts) String() string {
	parts := make([]string, 0, len(c))
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%s×%d", k, c[k]))
	}
	return strings.Join(parts, ", ")
}

// envSecret is the value of an environment variable named like a secret.
type envSecret struct {
	kind, value string
	probe       int // offset of the byte searched for: the rarest-looking one
}

// probe is a byte searched for with strings.IndexByte; each hit is checked against the
// anchors that contain the byte at the given offset.
type probe struct {
	b byte
	// anchors holds the anchors by the byte before the probe byte in them, or — for an
	// anchor starting with it — by the byte after it (in after), so a hit checks only the
	// anchors its neighbour allows.
	before, after [256][]anchorRef
}

type anchorRef struct {
	text   string
	offset int // of the probe byte in text
	rule   int // index in rules
}

// probeBytes are the bytes the anchors are found by: for each anchor its rarest byte in
// ordinary output (source code, listings, logs), so that ordinary text costs few checks.
var probeBytes = []byte{'J', 'K', 'B', 'G', 'A', '_', '-', 'k'}

// Redactor finds secrets in text and replaces them with markers naming their kind. It is
// safe for concurrent use.
type Redactor struct {
	probes []probe
	env    []envSecret
	exprs  []lazyExpr // by rule, compiled on first use
	// probed marks the bytes find searches for: the probe bytes and each environment
	// value's. A short text holding none of them holds no secret.
	probed [256]bool
	// plain marks the bytes a short text may consist of for Policy.Text to return it as it
	// is: bytes cleantext.Clean leaves alone (cleantext.PlainByte) that are not probed.
	plain [256]bool
}

// shortScan is the length up to which find first looks for any searched-for byte in one
// pass, instead of one vectorized search per probe byte and environment value: below it,
// the one pass costs less than starting the searches, and a short clean text (most
// results) is done with at the end of it.
const shortScan = 128

// lazyExpr is a rule's compiled expression, made the first time the rule's anchor is found.
type lazyExpr struct {
	once sync.Once
	re   *regexp.Regexp
}

// expr returns rule ri's compiled expression. The patterns are constants that
// TestRulesCompile compiles, so MustCompile cannot fail here.
func (r *Redactor) expr(ri int) *regexp.Regexp {
	e := &r.exprs[ri]
	e.once.Do(func() { e.re = regexp.MustCompile(rules[ri].pattern) })
	return e.re
}

// NewRedactor returns a redactor for the built-in rules and for the values of the
// environment variables in env ("NAME=value" entries, as os.Environ returns them) whose
// names look like secrets (see SecretName) and whose values are at least MinEnvSecretLen
// bytes long.
func NewRedactor(env []string) *Redactor {
	r := &Redactor{exprs: make([]lazyExpr, len(rules))}
	byByte := map[byte]*probe{}
	for i, ru := range rules {
		for _, a := range ru.anchors {
			k := probeOffset(a)
			p := byByte[a[k]]
			if p == nil {
				p = &probe{b: a[k]}
				byByte[a[k]] = p
			}
			ref := anchorRef{text: a, offset: k, rule: i}
			if k > 0 {
				p.before[a[k-1]] = append(p.before[a[k-1]], ref)
			} else {
				p.after[a[k+1]] = append(p.after[a[k+1]], ref)
			}
		}
	}
	for _, b := range probeBytes {
		if p := byByte[b]; p != nil {
			r.probes = append(r.probes, *p)
			r.probed[b] = true
		}
	}
	seen := map[string]bool{}
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !SecretName(name) || !worthRedacting(value) || seen[value] {
			continue
		}
		seen[value] = true
		e := envSecret{kind: EnvKindPrefix + name, value: value, probe: rarestByte(value)}
		r.env = append(r.env, e)
		r.probed[e.value[e.probe]] = true
	}
	for c := range r.plain {
		r.plain[c] = cleantext.PlainByte(byte(c)) && !r.probed[c]
	}
	// Longer values first, so a value containing another is redacted whole.
	slices.SortStableFunc(r.env, func(a, b envSecret) int { return len(b.value) - len(a.value) })
	return r
}

// commonBytes are the bytes of ordinary output from the most to the least common; a byte
// not listed is rarer than all of them.
const commonBytes = " etaoinsrhldcu\n-./_mfpgwybv:=,k0123456789\"'()x"

// rarestByte returns the offset of the byte of v least likely in ordinary output: an
// environment value is searched for by it.
func rarestByte(v string) int {
	best, rank := 0, -1
	for i := 0; i < len(v); i++ {
		r := strings.IndexByte(commonBytes, v[i])
		if r < 0 {
			return i
		}
		if r > rank {
			best, rank = i, r
		}
	}
	return best
}

// probeOffset returns the offset in anchor of its rarest byte, by the order of probeBytes.
func probeOffset(anchor string) int {
	for _, b := range probeBytes {
		if k := strings.IndexByte(anchor, b); k >= 0 {
			return k
		}
	}
	panic("redact: anchor " + anchor + " has none of the probe bytes")
}

// worthRedacting reports whether an environment value is long and varied enough that
// finding it in output means the secret leaked, not that a common word appeared.
func worthRedacting(v string) bool {
	if len(v) < MinEnvSecretLen || strings.ContainsAny(v, "\n\r") || !utf8.ValidString(v) {
		return false
	}
	// The value must not be found in a marker, or redacting would never settle.
	if strings.Contains(strings.ToUpper(v), "REDACTED") || strings.ContainsAny(v, "[]") {
		return false
	}
	distinct := map[rune]bool{}
	for _, c := range v {
		distinct[c] = true
	}
	return len(distinct) >= 4
}

// secretWords are the name parts that make an environment variable's value a secret.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "PWD", "CREDENTIAL", "CREDENTIALS", "AUTH", "PRIVATE", "SESSION", "COOKIE", "SIGNATURE", "CERT"}

// publicNames are variables whose names contain a secret word but whose values are not
// secrets and appear in ordinary output (paths, terminal settings).
var publicNames = map[string]bool{"PWD": true, "OLDPWD": true, "KEYTIMEOUT": true, "GPG_AGENT_INFO": true, "SSH_AUTH_SOCK": true}

// SecretName reports whether an environment variable's name says its value is a secret:
// one of its "_"-separated words (case-insensitively) is KEY, TOKEN, SECRET, PASSWORD,
// PASSWD, PASS, PWD, CREDENTIAL(S), AUTH, PRIVATE, SESSION, COOKIE, SIGNATURE or CERT
// (AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN, DB_PASSWORD, …). PWD, OLDPWD and SSH_AUTH_SOCK are
// not: their values are paths.
func SecretName(name string) bool {
	up := strings.ToUpper(name)
	if publicNames[up] {
		return false
	}
	for w := range strings.SplitSeq(up, "_") {
		if slices.Contains(secretWords, w) {
			return true
		}
	}
	return false
}

// EnvKinds returns the kinds of the environment secrets the redactor looks for
// ("env:NAME"), never their values.
func (r *Redactor) EnvKinds() []string {
	out := make([]string, len(r.env))
	for i, e := range r.env {
		out[i] = e.kind
	}
	return out
}

// span is one secret found: s[start:end] is replaced by the marker of kind.
type span struct {
	start, end int
	kind       string
}

// String returns s with every secret replaced by its marker, and how many of each kind it
// replaced. It returns s itself, and nil counts, when there is none.
//
// A marker can expose a secret that was glued to the one it replaced (a rule that needs a
// word boundary now has one), so String repeats until nothing is left to redact; that
// ends, because every round replaces some of the text outside markers with a marker.
func (r *Redactor) String(s string) (string, Counts) {
	var total Counts
	for {
		out, counts := r.once(s)
		if counts == nil {
			return s, total
		}
		total = total.add(counts)
		s = out
	}
}

// once is one round of String.
func (r *Redactor) once(s string) (string, Counts) {
	spans := r.find(s, nil)
	if len(spans) == 0 {
		return s, nil
	}
	slices.SortFunc(spans, func(a, b span) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return b.end - a.end
	})
	var b strings.Builder
	b.Grow(len(s))
	counts := Counts{}
	last := 0
	for i := 0; i < len(spans); {
		sp := spans[i]
		end := sp.end
		j := i + 1
		for ; j < len(spans) && spans[j].start < end; j++ { // overlapping: one marker
			end = max(end, spans[j].end)
		}
		b.WriteString(s[last:sp.start])
		b.WriteString(Marker(sp.kind))
		counts[sp.kind]++
		last = end
		i = j
	}
	b.WriteString(s[last:])
	return b.String(), counts
}

// find appends the secrets of s to spans.
//
// Each probe byte is searched with strings.IndexByte, which the runtime vectorizes, so text
// without the byte costs a fraction of a byte-by-byte loop; the probe bytes are chosen to be
// rare in ordinary output (see probeBytes), which keeps the restarts at hits few. A hit
// that completes an anchor marks the anchor's rule; each marked rule's expression then runs
// once, from its first anchor to the end of the text, however many anchors it has — so the
// work is bounded by the number of rules, not of anchors.
func (r *Redactor) find(s string, spans []span) []span {
	if len(s) <= shortScan && !r.anyProbed(s) {
		return spans
	}
	return r.findAll(s, spans)
}

// anyProbed reports whether s holds a byte find searches for.
func (r *Redactor) anyProbed(s string) bool {
	for i := 0; i < len(s); i++ {
		if r.probed[s[i]] {
			return true
		}
	}
	return false
}

// plainText reports whether s is at most shortScan bytes of plain bytes: a text cleaning
// leaves as it is and holding no byte find searches for, so no secret either. It is the
// one pass Policy.Text makes over most tool output.
func (r *Redactor) plainText(s string) bool {
	if len(s) > shortScan {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !r.plain[s[i]] {
			return false
		}
	}
	return true
}

// findAll is find without the pass for short texts: every probe byte and environment
// value searched for.
func (r *Redactor) findAll(s string, spans []span) []span {
	var first []int // per rule: the position of its first anchor, -1 for none
	for pi := range r.probes {
		p := &r.probes[pi]
		for i := 0; ; {
			k := strings.IndexByte(s[i:], p.b)
			if k < 0 {
				break
			}
			at := i + k
			i = at + 1
			if at > 0 {
				if before := p.before[s[at-1]]; len(before) > 0 {
					first = mark(s, at, before, first)
				}
			}
			if at+1 < len(s) {
				if after := p.after[s[at+1]]; len(after) > 0 {
					first = mark(s, at, after, first)
				}
			}
		}
	}
	for ri, start := range first {
		if start >= 0 {
			spans = r.matchFrom(s, start, ri, spans)
		}
	}
	for _, e := range r.env {
		for i := 0; ; {
			k := strings.IndexByte(s[i:], e.value[e.probe])
			if k < 0 {
				break
			}
			at := i + k
			i = at + 1
			start := at - e.probe
			if start < 0 || start+len(e.value) > len(s) || s[start:start+len(e.value)] != e.value {
				continue
			}
			spans = append(spans, span{start, start + len(e.value), e.kind})
			i = start + len(e.value)
		}
	}
	return spans
}

// mark records, for each of the anchors that is really at the probe hit at, the anchor's
// position as its rule's first when it is the earliest so far.
func mark(s string, at int, anchors []anchorRef, first []int) []int {
	for _, a := range anchors {
		start := at - a.offset
		end := start + len(a.text)
		if start < 0 || end > len(s) || s[start:end] != a.text {
			continue
		}
		ru := &rules[a.rule]
		if ru.word && start > 0 && isWord(s[start-1]) {
			continue
		}
		if first == nil {
			first = make([]int, len(rules))
			for i := range first {
				first[i] = -1
			}
		}
		if first[a.rule] < 0 || start < first[a.rule] {
			first[a.rule] = start
		}
	}
	return first
}

// matchFrom runs rule ri from just before its first anchor, at start, to the end of s and
// appends what it finds.
func (r *Redactor) matchFrom(s string, start, ri int, spans []span) []span {
	ru := &rules[ri]
	re := r.expr(ri)
	lo := max(0, start-ru.back-1) // one byte more, so a leading \b sees its context
	w := s[lo:]
	for _, m := range re.FindAllStringSubmatchIndex(w, -1) {
		gs, ge := m[2*ru.group], m[2*ru.group+1]
		if gs < 0 {
			continue
		}
		if m[0] == 0 && lo > 0 && isWord(s[lo-1]) && strings.HasPrefix(ru.pattern, `\b`) {
			continue // the \b at the start of w is not one in s
		}
		if ru.lines && lo+ge < len(s) && s[lo+ge] != '\n' && s[lo+ge] != '\r' {
			// the last line matched only in part: keep it
			if k := strings.LastIndexByte(w[gs:ge], '\n'); k >= 0 {
				ge = gs + k
			}
		}
		if ru.lines {
			ge = gs + len(strings.TrimRight(w[gs:ge], "\r\n")) // the line ends are not the key's
		}
		if ru.entropy > 0 && entropy(w[gs:ge]) < ru.entropy {
			continue
		}
		spans = append(spans, span{lo + gs, lo + ge, ru.kind})
	}
	return spans
}

func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// entropy is the Shannon entropy of s in bits per character, as gitleaks computes it.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	var other map[rune]int
	for _, c := range s {
		if c < 256 {
			counts[c]++
			continue
		}
		if other == nil {
			other = map[rune]int{}
		}
		other[c]++
	}
	h := 0.0
	inv := 1 / float64(len(s))
	add := func(c int) {
		if c > 0 {
			f := float64(c) * inv
			h -= f * math.Log2(f)
		}
	}
	for _, c := range counts {
		add(c)
	}
	for _, c := range other {
		add(c)
	}
	return h
}
