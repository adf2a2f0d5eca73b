package rules_test

import (
	"github.com/dsh-go/dsh/jsonv"
)

// fataler is the part of testing.TB and *rapid.T that js needs.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// js parses JSON text into a jsonv value.
func js(tb fataler, text string) any {
	tb.Helper()
	v, err := jsonv.ParseString(text)
	if err != nil {
		tb.Fatalf("parse %s: %v", text, err)
	}
	return v
}
