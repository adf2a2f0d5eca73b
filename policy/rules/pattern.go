package rules

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Pattern is one parsed permission pattern: a tool-name pattern and an optional argument
// pattern.
type Pattern struct {
	raw    string
	tool   string
	arg    string // "" when the pattern has no argument part
	hasArg bool
	path   pathGlob // arg compiled as a path pattern
	cmd    string   // arg normalized as a command
}

// ParsePattern parses one pattern of the grammar in the package documentation. Surrounding
// white space is ignored.
func ParsePattern(s string) (Pattern, error) {
	raw := strings.TrimSpace(s)
	fail := func(format string, args ...any) (Pattern, error) {
		return Pattern{}, fmt.Errorf("rules: invalid pattern %q: %s", s, fmt.Sprintf(format, args...))
	}
	if !utf8.ValidString(raw) {
		return fail("not valid UTF-8")
	}
	if raw == "" {
		return fail("missing tool name")
	}
	tool, arg, hasArg := strings.Cut(raw, "(")
	if tool == "" {
		return fail("missing tool name before \"(\"")
	}
	for _, r := range tool {
		switch {
		case r == ')':
			return fail("unexpected \")\" in the tool name")
		case unicode.IsSpace(r):
			return fail("tool name %q contains white space", tool)
		case unicode.IsControl(r):
			return fail("tool name %q contains a control character", tool)
		}
	}
	p := Pattern{raw: raw, tool: tool}
	if !hasArg {
		return p, nil
	}
	end := strings.LastIndexByte(arg, ')')
	if end < 0 {
		return fail("missing \")\"")
	}
	if rest := arg[end+1:]; rest != "" {
		return fail("unexpected text %q after \")\"", rest)
	}
	arg = arg[:end]
	if strings.TrimSpace(arg) == "" {
		return fail("empty argument pattern (write %q to match every call of the tool)", tool)
	}
	p.arg, p.hasArg = arg, true
	p.path = compilePath(arg)
	p.cmd = normalizeSpace(arg)
	return p, nil
}

// MustParsePattern is ParsePattern for patterns fixed in code; it panics on an error.
func MustParsePattern(s string) Pattern {
	p, err := ParsePattern(s)
	if err != nil {
		panic(err)
	}
	return p
}

// String returns the pattern as written (without surrounding white space).
func (p Pattern) String() string { return p.raw }

// Tool returns the tool-name pattern.
func (p Pattern) Tool() string { return p.tool }

// Argument returns the argument pattern and whether the pattern has one.
func (p Pattern) Argument() (string, bool) { return p.arg, p.hasArg }
