package tool

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dsh-go/dsh/jsonv"
)

// isPathArg reports whether a top-level argument name names a filesystem path, in any tool:
// the built-in tools' file_path, path and workdir and the names MCP servers commonly use. No
// operating system accepts a NUL byte in a path, and passing one on would cut the path short
// silently, so a NUL in any of them fails INVALID_ARGS.
func isPathArg(name string) bool {
	switch name {
	case "file_path", "path", "paths", "workdir", "cwd", "dir", "directory", "notebook_path", "source", "destination":
		return true
	}
	return false
}

// checkArgs enforces the argument limits on a call's snapshotted arguments: the size cap
// and no NUL byte in a path argument. It returns the INVALID_ARGS error, or nil.
func (r *Registry) checkArgs(args any) error {
	if n := jsonSize(args); n > r.maxArgs {
		return argsTooLarge(n, r.maxArgs)
	}
	o, ok := args.(*jsonv.Object)
	if !ok {
		return nil
	}
	for _, m := range o.Members() {
		if !isPathArg(m.Name) {
			continue
		}
		switch v := m.Value.(type) {
		case string:
			if strings.IndexByte(v, 0) >= 0 {
				return nulInPath(m.Name)
			}
		case []any:
			for i, e := range v {
				if s, ok := e.(string); ok && strings.IndexByte(s, 0) >= 0 {
					return nulInPath(m.Name + "[" + strconv.Itoa(i) + "]")
				}
			}
		}
	}
	return nil
}

// argsTooLarge is the INVALID_ARGS error of arguments of n bytes over the cap.
func argsTooLarge(n, limit int) *Error {
	return &Error{Name: "ToolArgsError", Code: CodeInvalidArgs,
		Message: fmt.Sprintf("invalid arguments: they are %d bytes of JSON, over the limit of %d bytes for one call; pass less at a time (for example, write a large file in parts)", n, limit)}
}

// nulInPath is the INVALID_ARGS error of a NUL byte in the path argument name.
func nulInPath(name string) *Error {
	return &Error{Name: "ToolArgsError", Code: CodeInvalidArgs,
		Message: fmt.Sprintf("invalid arguments: %q contains a NUL byte, which no file path may hold", name)}
}

// jsonSize returns the length of v (a snapshotted value) encoded as compact JSON by
// jsonv.Marshal, without encoding it: numbers as the encoder formats them, strings with the
// escapes it writes (control characters, quote and backslash).
func jsonSize(v any) int {
	n := 0
	stack := make([]any, 0, 16)
	stack = append(stack, v)
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch x := x.(type) {
		case nil:
			n += 4
		case bool:
			if x {
				n += 4
			} else {
				n += 5
			}
		case float64:
			var buf [32]byte
			n += len(jsontext.AppendFloat(buf[:0], x, 64))
		case string:
			n += stringSize(x)
		case []any:
			n += 2 + max(len(x)-1, 0) // brackets and commas
			for _, e := range x {
				stack = append(stack, e)
			}
		case *jsonv.Object:
			ms := x.Members()
			n += 2 + max(len(ms)-1, 0) + len(ms) // braces, commas, colons
			for _, m := range ms {
				n += stringSize(m.Name)
				stack = append(stack, m.Value)
			}
		default:
			// Not a snapshotted value: count its text form, which is at least as long.
			n += len(fmt.Sprint(x))
		}
	}
	return n
}

// stringSize is the length of s as a JSON string literal.
func stringSize(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}

// maxOwnedDepth bounds the nesting parsedValue walks; deeper values are copied by
// jsonv.Snapshot, which also rejects a container that is its own ancestor.
const maxOwnedDepth = 512

// parsedValue reports that v is made of the jsonv model only (nil, bool, finite float64 other than -0,
// valid UTF-8 string, []any, *jsonv.Object) and nests at most maxOwnedDepth deep, so it can serve as a
// call's snapshot as it is. It allocates nothing.
func parsedValue(v any, depth int) bool {
	if depth > maxOwnedDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool:
		return true
	case string:
		return utf8.ValidString(x)
	case float64:
		return lossless(x)
	case []any:
		for _, e := range x {
			if !parsedValue(e, depth+1) {
				return false
			}
		}
		return true
	case *jsonv.Object:
		if x == nil {
			return false
		}
		for _, m := range x.Members() {
			if !utf8.ValidString(m.Name) || !parsedValue(m.Value, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}
