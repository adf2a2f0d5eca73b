package codemode

import (
	"slices"
	"strings"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/schema"
)

// typeScriptInstructions is the usage contract above the TypeScript declarations (docs/behaviour.md §10.2).
const typeScriptInstructions = "## Writing code for run_code\n" +
	"\n" +
	"`run_code` takes two required arguments: `code`, the body of an async TypeScript function, and " +
	"`description`, a short label of what the program does. Use erasable syntax only (type annotations, " +
	"interfaces and `as` are fine; no `enum`, `namespace` or parameter properties): the program is " +
	"type-stripped, not type-checked, before it runs, and top-level `await` and `return` work. In the program:\n" +
	"\n" +
	"- Call a tool with `await tools.name(args)`; for a name that is not an identifier use quoted access, " +
	"`await tools[\"my-tool\"](args)`. A call resolves to the tool's canonical JSON value, typed below. " +
	"Tool arguments must be lossless JSON: plain objects, arrays, strings, finite numbers, booleans and `null`.\n" +
	"- A failed call rejects with `ToolCallError`: its `toolName` names the tool that failed and its `message` " +
	"says why. Catch it with `try`/`catch` to recover and carry on.\n" +
	"- Independent read-only calls MAY overlap under `Promise.all` (calls that are safe to run together run " +
	"concurrently; calls that change something run alone, in the order the program submitted them). Use " +
	"`await` to sequence work that depends on an earlier result.\n" +
	"- Only what the program prints (`console.log(...)`) or returns comes back to you; every other " +
	"intermediate result stays out of the conversation, so return just what you need. A successful tool " +
	"result that contains an image is attached after the run, for you to look at in the next step.\n" +
	"\n" +
	"The available tools:"

// typeScriptPrelude is the first declaration of the TypeScript SDK.
const typeScriptPrelude = "type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }"

// typeScriptEpilogue is the part of the TypeScript SDK after the two maps.
const typeScriptEpilogue = "type ToolName = keyof ToolOutputMap\n" +
	"\n" +
	"declare class ToolCallError extends Error {\n" +
	"  readonly name: \"ToolCallError\";\n" +
	"  readonly toolName: ToolName;\n" +
	"}\n" +
	"\n" +
	"declare const tools: {\n" +
	"  [K in ToolName]: (args: ToolArgsMap[K]) => Promise<ToolOutputMap[K]>;\n" +
	"}"

// RenderTypeScript renders the Code Mode SDK section for a TypeScript runtime (docs/behaviour.md §10.2):
// the usage instructions, then a ```ts block declaring JsonValue, the ToolArgsMap and
// ToolOutputMap interfaces (one member per tool, in UTF-16 code-unit order of the names,
// exotic names quoted), ToolName, ToolCallError and the `tools` object a program calls.
// The text depends only on the set of tools, not on their order, so an unchanged tool set
// renders byte-identically. Tools should have distinct names; run_code is not expected.
func RenderTypeScript(tools []SDKTool) string {
	sorted := sortTools(tools)
	var args, outs strings.Builder
	for _, t := range sorted {
		if doc, ok := tsDoc(t.Description, 1); ok {
			args.WriteString(doc)
			args.WriteByte('\n')
		}
		key := tsKey(t.Name)
		args.WriteString("  " + key + ": " + TypeScriptType(t.Parameters, 1) + ";\n")
		outs.WriteString("  " + key + ": " + TypeScriptType(t.Output, 1) + ";\n")
	}
	var b strings.Builder
	b.WriteString(typeScriptInstructions)
	b.WriteString("\n\n```ts\n")
	b.WriteString(typeScriptPrelude)
	b.WriteString("\n\ninterface ToolArgsMap {")
	if args.Len() > 0 {
		b.WriteString("\n" + args.String())
	}
	b.WriteString("}\n\ninterface ToolOutputMap {")
	if outs.Len() > 0 {
		b.WriteString("\n" + outs.String())
	}
	b.WriteString("}\n\n")
	b.WriteString(typeScriptEpilogue)
	b.WriteString("\n```")
	return b.String()
}

// sortTools returns the tools in the reference's order: by name, compared as UTF-16 code
// units, stable for equal names.
func sortTools(tools []SDKTool) []SDKTool {
	sorted := slices.Clone(tools)
	slices.SortStableFunc(sorted, func(a, b SDKTool) int { return compareUTF16(a.Name, b.Name) })
	return sorted
}

// TypeScriptType renders a JSON Schema of the supported subset (docs/behaviour.md §2.1) as a TypeScript
// type (docs/behaviour.md §10.2): scalars, literal unions for const and enum, unions for oneOf, T[] for
// arrays, object literal types with JSDoc per described property (indented two spaces per
// level from indent), `& Record<string, JsonValue>` for open objects, Record<string, never>
// for closed empty ones and JsonValue for an unconstrained node. It is total: a value that
// is not a supported schema renders as `unknown`.
func TypeScriptType(raw any, indent int) string {
	root, ok := supported(raw)
	if !ok {
		return "unknown"
	}
	w := tsWriter{ops: map[*jsonv.Object]bool{}}
	w.node(root, indent)
	return w.b.String()
}

// supported returns raw as a jsonv schema tree when it is inside the supported subset.
func supported(raw any) (*jsonv.Object, bool) {
	snap, err := jsonv.Snapshot(raw)
	if err != nil {
		return nil, false
	}
	if schema.Assert(snap) != nil {
		return nil, false
	}
	o, ok := snap.(*jsonv.Object)
	return o, ok
}

// tsWriter renders an asserted schema tree. ops memoizes whether a node's rendering
// contains '|' or '&', which decides the parentheses of an array type, so that nested
// arrays render in linear time.
type tsWriter struct {
	b   strings.Builder
	ops map[*jsonv.Object]bool
}

func member(o *jsonv.Object, name string) any {
	v, _ := o.Get(name)
	return v
}

func (w *tsWriter) node(o *jsonv.Object, indent int) {
	if branches, ok := o.Get("oneOf"); ok {
		for i, br := range branches.([]any) {
			if i > 0 {
				w.b.WriteString(" | ")
			}
			w.node(br.(*jsonv.Object), indent)
		}
		return
	}
	t, ok := o.Get("type")
	if !ok {
		w.b.WriteString("JsonValue")
		return
	}
	switch t {
	case "array":
		items, ok := o.Get("items")
		if !ok {
			w.b.WriteString("JsonValue[]")
			return
		}
		it := items.(*jsonv.Object)
		if w.hasOp(it) {
			w.b.WriteByte('(')
			w.node(it, indent)
			w.b.WriteString(")[]")
		} else {
			w.node(it, indent)
			w.b.WriteString("[]")
		}
	case "object":
		props, _ := member(o, "properties").(*jsonv.Object)
		open := member(o, "additionalProperties") != false
		if props.Len() == 0 {
			if open {
				w.b.WriteString("Record<string, JsonValue>")
			} else {
				w.b.WriteString("Record<string, never>")
			}
			return
		}
		required := requiredSet(o)
		w.b.WriteByte('{')
		for _, m := range props.Members() {
			p := m.Value.(*jsonv.Object)
			if doc, ok := tsDoc(member(p, "description"), indent+1); ok {
				w.b.WriteString("\n" + doc)
			}
			w.b.WriteString("\n" + pad2(indent+1) + tsKey(m.Name))
			if !required[m.Name] {
				w.b.WriteByte('?')
			}
			w.b.WriteString(": ")
			w.node(p, indent+1)
			w.b.WriteByte(';')
		}
		w.b.WriteString("\n" + pad2(indent) + "}")
		if open {
			w.b.WriteString(" & Record<string, JsonValue>")
		}
	default:
		w.b.WriteString(tsScalar(o, t.(string)))
	}
}

// hasOp reports whether the rendering of o contains '|' or '&', which is how the reference
// decides to parenthesize an array's item type.
func (w *tsWriter) hasOp(o *jsonv.Object) bool {
	if v, ok := w.ops[o]; ok {
		return v
	}
	var r bool
	if _, ok := o.Get("oneOf"); ok {
		r = true // at least two branches joined by " | "
	} else if t, ok := o.Get("type"); ok {
		switch t {
		case "array":
			if items, ok := o.Get("items"); ok {
				r = w.hasOp(items.(*jsonv.Object))
			}
		case "object":
			props, _ := member(o, "properties").(*jsonv.Object)
			switch {
			case props.Len() == 0:
			case member(o, "additionalProperties") != false:
				r = true
			default:
				for _, m := range props.Members() {
					p := m.Value.(*jsonv.Object)
					desc, _ := member(p, "description").(string)
					if strings.ContainsAny(desc, "|&") || strings.ContainsAny(m.Name, "|&") || w.hasOp(p) {
						r = true
						break
					}
				}
			}
		default:
			r = strings.ContainsAny(tsScalar(o, t.(string)), "|&")
		}
	}
	w.ops[o] = r
	return r
}

// tsScalar renders a scalar node: its const, its enum as a union, or the broad type.
func tsScalar(o *jsonv.Object, t string) string {
	if c, ok := o.Get("const"); ok {
		return jsonLiteral(c)
	}
	if e, ok := o.Get("enum"); ok {
		vals := e.([]any)
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = jsonLiteral(v)
		}
		return strings.Join(parts, " | ")
	}
	if t == "integer" {
		return "number"
	}
	return t
}

func jsonLiteral(v any) string {
	b, err := jsonv.Marshal(v)
	if err != nil { // unreachable for an asserted schema
		return "unknown"
	}
	return string(b)
}

func requiredSet(o *jsonv.Object) map[string]bool {
	req, _ := member(o, "required").([]any)
	set := make(map[string]bool, len(req))
	for _, r := range req {
		if s, ok := r.(string); ok {
			set[s] = true
		}
	}
	return set
}

// tsDoc renders a one-line JSDoc comment for a description: whitespace collapsed, "*/"
// escaped so a description cannot end the comment.
func tsDoc(description any, indent int) (string, bool) {
	s, ok := description.(string)
	if !ok || s == "" {
		return "", false
	}
	return pad2(indent) + "/** " + strings.ReplaceAll(collapseSpace(s), "*/", `*\/`) + " */", true
}

// tsKey renders a property key: bare when it is an ASCII identifier, JSON-quoted otherwise.
func tsKey(name string) string {
	if isTSIdentifier(name) {
		return name
	}
	return jsonString(name)
}

func isTSIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c == '_', c == '$':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func pad2(indent int) string { return strings.Repeat("  ", indent) }
