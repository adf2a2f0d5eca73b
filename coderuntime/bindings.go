package coderuntime

import (
	"errors"
	"strings"
)

// ErrInvalidBinding is matched (errors.Is) by every error ValidateBindings returns.
var ErrInvalidBinding = errors.New("invalid binding declaration")

// bindingError is a binding-declaration error whose text is the exact message of docs/behaviour.md §10.7.
type bindingError struct{ msg string }

func (e *bindingError) Error() string        { return e.msg }
func (e *bindingError) Is(target error) bool { return target == ErrInvalidBinding }

// ValidateBindings checks binding declarations against the portable naming rules every
// backend enforces, so that a namespace list valid on one backend is valid on all (docs/behaviour.md
// §10.7). Globals and error-class names must be identifiers of the portable subset
// [A-Za-z_][A-Za-z0-9_]* that are no reserved word of ECMAScript or Python, must not name a
// slot a backend owns (console, __dsh_main__, __builtins__, __name__, __debug__) and must be
// unique among all injected globals; an error class's member property must be non-empty,
// not an Error or exception-protocol member and not of the dunder form __x__.
// Function names are not checked: any string is a valid own-property name.
func ValidateBindings(namespaces []Namespace) error {
	globals := make(map[string]bool, len(namespaces))
	for _, ns := range namespaces {
		if !IsPortableIdentifier(ns.Global) {
			return &bindingError{"binding global " + quoteJS(ns.Global) + " is not a usable identifier"}
		}
		if IsReservedGlobal(ns.Global) {
			return &bindingError{"reserved binding global " + quoteJS(ns.Global)}
		}
		if globals[ns.Global] {
			return &bindingError{"duplicate binding global " + quoteJS(ns.Global)}
		}
		globals[ns.Global] = true
	}
	classes := make(map[string]bool)
	for _, ns := range namespaces {
		ec := ns.ErrorClass
		if ec == nil {
			continue
		}
		if !IsPortableIdentifier(ec.Name) {
			return &bindingError{"binding error class " + quoteJS(ec.Name) + " is not a usable identifier"}
		}
		if IsReservedGlobal(ec.Name) {
			return &bindingError{"reserved binding global " + quoteJS(ec.Name)}
		}
		if globals[ec.Name] || classes[ec.Name] {
			return &bindingError{"duplicate injected global " + quoteJS(ec.Name)}
		}
		if !IsUsableErrorMember(ec.MemberNameProperty) {
			return &bindingError{"binding error member property " + quoteJS(ec.MemberNameProperty) + " is not usable"}
		}
		classes[ec.Name] = true
	}
	return nil
}

// IsPortableIdentifier reports whether s matches [A-Za-z_][A-Za-z0-9_]* and is not a
// reserved word of any portable target language (ECMAScript or Python, soft keywords
// included).
func IsPortableIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return !isPortableReservedWord(s)
}

// IsReservedGlobal reports whether s names a program-namespace slot that some backend owns
// (RESERVED_BINDING_GLOBALS of the reference): console, __dsh_main__, __builtins__,
// __name__ and __debug__.
func IsReservedGlobal(s string) bool {
	switch s {
	case "console", "__dsh_main__", "__builtins__", "__name__", "__debug__":
		return true
	}
	return false
}

// IsUsableErrorMember reports whether s may be an error class's member-name property: it
// must be non-empty, not one of name, message, stack, args, with_traceback, add_note, and
// not of the dunder form __x__ with a non-empty middle.
func IsUsableErrorMember(s string) bool {
	switch s {
	case "", "name", "message", "stack", "args", "with_traceback", "add_note":
		return false
	}
	return !isDunder(s)
}

// isDunder reports whether s matches the JavaScript regular expression ^__.+__$, whose "."
// excludes the line terminators \n, \r, U+2028 and U+2029.
func isDunder(s string) bool {
	if len(s) <= 4 || !strings.HasPrefix(s, "__") || !strings.HasSuffix(s, "__") {
		return false
	}
	return !strings.ContainsAny(s[2:len(s)-2], "\n\r\u2028\u2029")
}

// isPortableReservedWord reports whether s is a reserved word of ECMAScript (including
// strict-mode reserved names) or a keyword or soft keyword of Python 3.
func isPortableReservedWord(s string) bool {
	switch s {
	// ECMAScript reserved words and names reserved in strict mode.
	case "await", "break", "case", "catch", "class", "const", "continue", "debugger", "default",
		"delete", "do", "else", "enum", "export", "extends", "false", "finally", "for",
		"function", "if", "import", "in", "instanceof", "new", "null", "return", "super",
		"switch", "this", "throw", "true", "try", "typeof", "var", "void", "while", "with",
		"yield", "let", "static", "implements", "interface", "package", "private",
		"protected", "public", "arguments", "eval",
		// Python keywords and soft keywords not listed above.
		"False", "None", "True", "and", "as", "assert", "async", "def", "del", "elif",
		"except", "from", "global", "is", "lambda", "nonlocal", "not", "or", "pass", "raise",
		"match", "type", "_":
		return true
	}
	return false
}
