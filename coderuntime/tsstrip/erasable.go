package tsstrip

// The non-erasable constructs CheckErasable rejects, with the advice shown to the model.
const (
	constructEnum      = "enum declarations"
	constructNamespace = "namespace declarations"
	constructParamProp = "constructor parameter properties"
	constructDecorator = "decorators"
	constructImportEq  = "`import =` aliases"

	adviceEnum      = "only erasable type syntax is allowed; use a union of literal types or a plain object instead"
	adviceNamespace = "only erasable type syntax is allowed; use plain objects and functions instead (`declare namespace` is fine for types)"
	adviceParamProp = "only erasable type syntax is allowed; declare the field in the class body and assign it in the constructor"
	adviceDecorator = "only erasable type syntax is allowed; call the decorating function explicitly instead"
	adviceImportEq  = "only erasable type syntax is allowed; use const instead"
)

// CheckErasable reports the first TypeScript construct in program that type erasure cannot
// remove, as an *Error, or nil when there is none. It works on tokens, so text inside
// comments, strings, template literals and regular expressions never triggers it.
//
// Rejected: enum declarations (also const enum; declare enum is fine), namespace and module
// declarations with a body (declare namespace is fine), constructor parameters with an
// accessibility or readonly/override modifier, decorators, and `import x = …` aliases.
func CheckErasable(program string) error {
	toks := scan(program)
	fail := func(t token, construct, advice string) error {
		return &Error{Line: t.line, Column: t.column(program), Construct: construct, Message: advice}
	}
	at := func(i int) token {
		if i < 0 || i >= len(toks) {
			return token{kind: tokPunct, text: ""}
		}
		return toks[i]
	}
	isPunct := func(t token, s string) bool { return t.kind == tokPunct && t.text == s }
	isIdent := func(t token) bool { return t.kind == tokIdent }
	// afterDot reports whether toks[i] is a property name (x.enum, x?.namespace).
	afterDot := func(i int) bool {
		p := at(i - 1)
		return isPunct(p, ".") || isPunct(p, "?.")
	}
	// declared reports whether the declaration starting at toks[i] is ambient: preceded by
	// `declare` on the same line (a line break after declare ends that statement).
	declared := func(i int) bool {
		for j := i - 1; j >= 0; j-- {
			t := toks[j]
			if toks[j+1].nl {
				return false
			}
			if t.kind != tokIdent {
				return false
			}
			switch t.text {
			case "declare":
				return true
			case "const", "export", "default":
				continue
			}
			return false
		}
		return false
	}

	for i, t := range toks {
		switch {
		case isPunct(t, "@"):
			return fail(t, constructDecorator, adviceDecorator)

		case t.kind != tokIdent || afterDot(i):
			continue

		case t.text == "enum":
			if isIdent(at(i+1)) && isPunct(at(i+2), "{") && !declared(i) {
				start := t
				if p := at(i - 1); isIdent(p) && p.text == "const" && !t.nl {
					start = p
				}
				return fail(start, constructEnum, adviceEnum)
			}

		case t.text == "namespace" || t.text == "module":
			// namespace A.B.C { … } on one line up to the name.
			j := i + 1
			if !isIdent(at(j)) || at(j).nl {
				continue
			}
			for isPunct(at(j+1), ".") && isIdent(at(j+2)) {
				j += 2
			}
			if isPunct(at(j+1), "{") && !declared(i) {
				return fail(t, constructNamespace, adviceNamespace)
			}

		case t.text == "import":
			// import x = …, but not import type x = … (erased) and not import(…).
			if isIdent(at(i+1)) && at(i+1).text != "type" && isPunct(at(i+2), "=") {
				return fail(t, constructImportEq, adviceImportEq)
			}

		case t.text == "constructor" && isPunct(at(i+1), "("):
			if k, ok := parameterProperty(toks, i+1); ok {
				return fail(toks[k], constructParamProp, adviceParamProp)
			}
		}
	}
	return nil
}

// parameterProperty scans the parameter list opening at toks[open] ("(") and returns the
// index of the first parameter that starts with a modifier making it a parameter property.
func parameterProperty(toks []token, open int) (int, bool) {
	depth := 0
	start := true // at the start of a parameter
	for k := open; k < len(toks); k++ {
		t := toks[k]
		if t.kind == tokPunct {
			switch t.text {
			case "(", "[", "{":
				depth++
				start = depth == 1 && t.text == "("
				continue
			case ")", "]", "}":
				depth--
				if depth == 0 {
					return 0, false
				}
				start = false
				continue
			case ",":
				start = depth == 1
				continue
			}
		}
		if start && depth == 1 && t.kind == tokIdent && isModifier(t.text) && k+1 < len(toks) {
			next := toks[k+1]
			if next.kind == tokIdent || (next.kind == tokPunct && (next.text == "{" || next.text == "[")) {
				return k, true
			}
		}
		start = false
	}
	return 0, false
}

func isModifier(s string) bool {
	switch s {
	case "public", "private", "protected", "readonly", "override":
		return true
	}
	return false
}
