package coderuntime_test

import (
	"errors"
	"testing"

	"github.com/dsh-go/dsh/coderuntime"
)

func ns(global string) coderuntime.Namespace {
	return coderuntime.Namespace{Global: global, Functions: map[string]coderuntime.Func{}}
}

func nsWithClass(global, class, member string) coderuntime.Namespace {
	n := ns(global)
	n.ErrorClass = &coderuntime.ErrorClass{Name: class, MemberNameProperty: member}
	return n
}

func TestValidateBindings(t *testing.T) {
	tests := []struct {
		name     string
		bindings []coderuntime.Namespace
		want     string // "" = valid
	}{
		{"empty", nil, ""},
		{"tools", []coderuntime.Namespace{nsWithClass("tools", "ToolCallError", "toolName")}, ""},
		{"underscored", []coderuntime.Namespace{ns("_tools"), ns("t0"), ns("__name")}, ""},
		{"dollar is JS-only", []coderuntime.Namespace{ns("$tools")}, `binding global "$tools" is not a usable identifier`},
		{"dollar inside", []coderuntime.Namespace{ns("a$b")}, `binding global "a$b" is not a usable identifier`},
		{"space", []coderuntime.Namespace{ns("not valid!")}, `binding global "not valid!" is not a usable identifier`},
		{"empty global", []coderuntime.Namespace{ns("")}, `binding global "" is not a usable identifier`},
		{"digit first", []coderuntime.Namespace{ns("1tools")}, `binding global "1tools" is not a usable identifier`},
		{"non-ASCII", []coderuntime.Namespace{ns("tööls")}, `binding global "tööls" is not a usable identifier`},
		{"control char quoted like JSON", []coderuntime.Namespace{ns("a\nb")}, `binding global "a\nb" is not a usable identifier`},
		{"JS keyword", []coderuntime.Namespace{ns("await")}, `binding global "await" is not a usable identifier`},
		{"strict reserved", []coderuntime.Namespace{ns("arguments")}, `binding global "arguments" is not a usable identifier`},
		{"Python keyword", []coderuntime.Namespace{ns("lambda")}, `binding global "lambda" is not a usable identifier`},
		{"Python soft keyword", []coderuntime.Namespace{ns("match")}, `binding global "match" is not a usable identifier`},
		{"underscore alone", []coderuntime.Namespace{ns("_")}, `binding global "_" is not a usable identifier`},
		{"type", []coderuntime.Namespace{ns("type")}, `binding global "type" is not a usable identifier`},
		{"None", []coderuntime.Namespace{ns("None")}, `binding global "None" is not a usable identifier`},
		{"console", []coderuntime.Namespace{ns("console")}, `reserved binding global "console"`},
		{"__dsh_main__", []coderuntime.Namespace{ns("__dsh_main__")}, `reserved binding global "__dsh_main__"`},
		{"__builtins__", []coderuntime.Namespace{ns("__builtins__")}, `reserved binding global "__builtins__"`},
		{"__name__", []coderuntime.Namespace{ns("__name__")}, `reserved binding global "__name__"`},
		{"__debug__", []coderuntime.Namespace{ns("__debug__")}, `reserved binding global "__debug__"`},
		{"duplicate global", []coderuntime.Namespace{ns("tools"), ns("tools")}, `duplicate binding global "tools"`},
		{"error class not identifier", []coderuntime.Namespace{nsWithClass("tools", "not valid!", "m")}, `binding error class "not valid!" is not a usable identifier`},
		{"error class keyword", []coderuntime.Namespace{nsWithClass("tools", "await", "m")}, `binding error class "await" is not a usable identifier`},
		{"error class reserved", []coderuntime.Namespace{nsWithClass("tools", "console", "m")}, `reserved binding global "console"`},
		{"error class equals own global", []coderuntime.Namespace{nsWithClass("tools", "tools", "m")}, `duplicate injected global "tools"`},
		{"error class equals later global", []coderuntime.Namespace{nsWithClass("tools", "helpers", "m"), ns("helpers")}, `duplicate injected global "helpers"`},
		{"two error classes collide", []coderuntime.Namespace{nsWithClass("tools", "CallError", "m"), nsWithClass("helpers", "CallError", "m")}, `duplicate injected global "CallError"`},
		{"empty member", []coderuntime.Namespace{nsWithClass("tools", "CallError", "")}, `binding error member property "" is not usable`},
		{"member name", []coderuntime.Namespace{nsWithClass("tools", "CallError", "name")}, `binding error member property "name" is not usable`},
		{"member message", []coderuntime.Namespace{nsWithClass("tools", "CallError", "message")}, `binding error member property "message" is not usable`},
		{"member stack", []coderuntime.Namespace{nsWithClass("tools", "CallError", "stack")}, `binding error member property "stack" is not usable`},
		{"member args", []coderuntime.Namespace{nsWithClass("tools", "CallError", "args")}, `binding error member property "args" is not usable`},
		{"member with_traceback", []coderuntime.Namespace{nsWithClass("tools", "CallError", "with_traceback")}, `binding error member property "with_traceback" is not usable`},
		{"member add_note", []coderuntime.Namespace{nsWithClass("tools", "CallError", "add_note")}, `binding error member property "add_note" is not usable`},
		{"member dunder", []coderuntime.Namespace{nsWithClass("tools", "CallError", "__dict__")}, `binding error member property "__dict__" is not usable`},
		{"member five underscores is dunder", []coderuntime.Namespace{nsWithClass("tools", "CallError", "_____")}, `binding error member property "_____" is not usable`},
		{"member four underscores is not dunder", []coderuntime.Namespace{nsWithClass("tools", "CallError", "____")}, ""},
		{"member dunder with newline is not dunder", []coderuntime.Namespace{nsWithClass("tools", "CallError", "__a\nb__")}, ""},
		{"member half dunder", []coderuntime.Namespace{nsWithClass("tools", "CallError", "__mid")}, ""},
		{"member arbitrary string", []coderuntime.Namespace{nsWithClass("tools", "CallError", "tool name!")}, ""},
		{"global named like an error class elsewhere", []coderuntime.Namespace{ns("ToolCallError")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := coderuntime.ValidateBindings(tt.bindings)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("ValidateBindings = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("ValidateBindings = %v, want %q", err, tt.want)
			}
			if !errors.Is(err, coderuntime.ErrInvalidBinding) {
				t.Errorf("errors.Is(%v, ErrInvalidBinding) = false", err)
			}
		})
	}
}

func TestFunctionNamesAreNotValidated(t *testing.T) {
	n := ns("tools")
	for _, name := range []string{"__proto__", "constructor", "", "with space", "toString"} {
		n.Functions[name] = nil
	}
	if err := coderuntime.ValidateBindings([]coderuntime.Namespace{n}); err != nil {
		t.Fatal(err)
	}
}
