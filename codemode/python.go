package codemode

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
	"golang.org/x/text/unicode/norm"

	"github.com/dsh-go/dsh/jsonv"
)

// pythonInstructions is the usage contract above the Python declarations (docs/behaviour.md §10.3). The
// programs run on the Starlark backend, so the text says Starlark, and what Starlark lacks.
const pythonInstructions = "## Writing code for run_code\n" +
	"\n" +
	"`run_code` takes two required arguments: `code` — the body of a function written in Starlark, a small, " +
	"deterministic dialect of Python (top-level `await` and `return` both work) — and `description`, a short " +
	"label of what the program does. Starlark is not full Python: there is no `class`, no " +
	"`try`/`except`/`raise` (`fail(\"message\")` stops the program), no `with`, no `is` (compare with `==`), no " +
	"`**` (use `math.pow`), no type annotations, and no `import` — only `asyncio`, `json` and `math` exist, " +
	"predeclared (importing them is accepted and does nothing). Strings are not iterable (use `s.elems()`), " +
	"lists have no `.sort()` (use `sorted(...)`); f-strings work. At run time exactly two of the names declared below are bound: `tools` " +
	"and `ToolCallError`. Everything else is a static stub of argument and result types; in particular the " +
	"`TypedDict` classes do not exist when the program runs, so build arguments as plain dicts and lists: " +
	"`await tools.name({\"field\": 1})`, never `FooArgs(field=1)`, which fails as an undefined name. In the program:\n" +
	"\n" +
	"- Call a tool with `await tools.name(args)`; for a name that is exotic, a keyword or starts with `_`, use " +
	"subscript access: `await tools[\"my-tool\"](args)`. A call returns the tool's canonical JSON value (the " +
	"method's return type below). Tool arguments must be lossless JSON: dicts with string keys, lists, " +
	"strings, finite numbers, booleans and `None`.\n" +
	"- A failed call raises `ToolCallError`, whose `toolName` names the tool that failed and whose message says " +
	"why. Starlark cannot catch it: the run stops, and you see the failure and everything printed before it.\n" +
	"- Calls run one at a time, in the order the program makes them; `asyncio.gather(...)` is accepted but " +
	"the calls still run one at a time.\n" +
	"- Emit the answer with `print(...)` and/or a top-level `return <value>`; the returned value must be " +
	"lossless JSON. Only what you print and return comes back to you; every other intermediate result stays " +
	"out of the conversation, so return just what you need. A successful tool result that contains an image " +
	"is attached after the run, for you to look at in the next step.\n" +
	"\n" +
	"The available tools:"

const (
	// maxClassNameBase caps a class-name base, in UTF-16 code units, so that names (and the
	// whole text) stay linear in the depth of a schema.
	maxClassNameBase = 120
	// maxListNesting is the deepest list[…] chain of one annotation; deeper item types are
	// Any, so the stub stays within CPython's limit of 200 open brackets.
	maxListNesting = 180
)

// pyReserved are the names that cannot be an attribute or a TypedDict field: Python's hard
// keywords and __debug__, which cannot be assigned.
var pyReserved = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
	"__debug__": true,
}

// typingOrder is the order of the typing import.
var typingOrder = []string{"Any", "Literal", "NotRequired", "Protocol", "TypedDict"}

// pyState collects what one rendering emits: the TypedDict classes (nested ones before
// the class that refers to them), the class names taken, and the typing symbols used.
type pyState struct {
	classes []string
	used    map[string]bool
	next    map[string]int
	typing  map[string]bool
	upper   cases.Caser
}

func newPyState() *pyState {
	return &pyState{used: map[string]bool{}, next: map[string]int{}, typing: map[string]bool{}, upper: cases.Upper(language.Und)}
}

// PythonType renders a JSON Schema of the supported subset as a Python type expression
// (docs/behaviour.md §10.3) without a naming context: str, float, int, bool, None, Literal[…] for const
// and enum, A | B for oneOf, list[T], and dict[str, Any] for every object (a TypedDict
// needs a class name, which only RenderPython provides). It is total: a value that is not
// a supported schema renders as Any.
func PythonType(raw any) string {
	return newPyState().render(raw, "")
}

// RenderPython renders the Code Mode SDK section for a Python-flavoured runtime (Starlark;
// docs/behaviour.md §10.3): the usage instructions, then a ```python block with the typing import (only
// the symbols used), ToolCallError, one TypedDict per object-shaped argument or output
// (and per nested object, declared before its user), and a Tools protocol with one async
// method per tool whose name is a usable attribute; any other tool is listed as a comment
// showing its subscript form. Tools are in UTF-16 code-unit order of their names, so an
// unchanged tool set renders byte-identically.
func RenderPython(tools []SDKTool) string {
	st := newPyState()
	st.typing["Protocol"] = true
	var members []string
	statements := 0
	for _, t := range sortTools(tools) {
		base := st.camelCase(t.Name)
		argType := st.render(t.Parameters, base+"Args")
		outType := st.render(t.Output, base+"Output")
		if isBareIdentifier(t.Name) && !pyReserved[t.Name] && !strings.HasPrefix(t.Name, "_") {
			sig := "    async def " + t.Name + "(self, args: " + argType + ") -> " + outType + ":"
			if doc, ok := pyDoc(t.Description); ok {
				members = append(members, sig, "        "+doc)
			} else {
				members = append(members, sig+" ...")
			}
			statements++
			continue
		}
		members = append(members, "    # tools["+jsonString(t.Name)+"](args: "+argType+") -> "+outType)
		if d, ok := describe(t.Description); ok {
			members = append(members, "    #   "+d)
		}
	}
	if statements == 0 {
		members = append([]string{"    pass"}, members...)
	}
	var imports []string
	for _, sym := range typingOrder {
		if st.typing[sym] {
			imports = append(imports, sym)
		}
	}
	var b strings.Builder
	b.WriteString(pythonInstructions)
	b.WriteString("\n\n```python\nfrom typing import ")
	b.WriteString(strings.Join(imports, ", "))
	b.WriteString("\n\nclass ToolCallError(Exception):\n    toolName: str\n\n")
	for _, c := range st.classes {
		b.WriteString(c)
		b.WriteString("\n\n")
	}
	b.WriteString("class Tools(Protocol):\n")
	b.WriteString(strings.Join(members, "\n"))
	b.WriteString("\n\ntools: Tools\n```")
	return b.String()
}

// render renders one schema; className names its object (empty: no naming context, so
// objects degrade to dict[str, Any]). An unsupported schema is Any.
func (st *pyState) render(raw any, className string) string {
	root, ok := supported(raw)
	if !ok {
		st.typing["Any"] = true
		return "Any"
	}
	var b strings.Builder
	st.write(&b, root, className, 0, className == "")
	return b.String()
}

// write renders an asserted node into b. listDepth counts the list[ brackets open around
// it in the annotation being built.
func (st *pyState) write(b *strings.Builder, o *jsonv.Object, className string, listDepth int, free bool) {
	if branches, ok := o.Get("oneOf"); ok {
		for i, br := range branches.([]any) {
			if i > 0 {
				b.WriteString(" | ")
			}
			st.write(b, br.(*jsonv.Object), childClassName(className, strconv.Itoa(i+1)), listDepth, free)
		}
		return
	}
	t, ok := o.Get("type")
	if !ok {
		st.any(b, "Any")
		return
	}
	switch t {
	case "string":
		b.WriteString(st.scalar(o, "str"))
	case "number":
		b.WriteString(st.scalar(o, "float"))
	case "integer":
		b.WriteString(st.scalar(o, "int"))
	case "boolean":
		b.WriteString(st.scalar(o, "bool"))
	case "null":
		b.WriteString("None")
	case "array":
		items, ok := o.Get("items")
		switch {
		case !ok:
			st.any(b, "list[Any]")
		case listDepth >= maxListNesting:
			st.any(b, "Any")
		default:
			b.WriteString("list[")
			st.write(b, items.(*jsonv.Object), className, listDepth+1, free)
			b.WriteByte(']')
		}
	case "object":
		st.object(b, o, className, free)
	}
}

func (st *pyState) any(b *strings.Builder, text string) {
	st.typing["Any"] = true
	b.WriteString(text)
}

// object declares a TypedDict for o and writes its name, or degrades to dict[str, Any]:
// without a naming context, for an open object without properties, and when a field name
// cannot be a class-syntax field.
func (st *pyState) object(b *strings.Builder, o *jsonv.Object, className string, free bool) {
	props, _ := member(o, "properties").(*jsonv.Object)
	open := member(o, "additionalProperties") != false
	if free || (props.Len() == 0 && open) {
		st.any(b, "dict[str, Any]")
		return
	}
	for _, m := range props.Members() {
		if !isFieldName(m.Name) {
			st.any(b, "dict[str, Any]")
			return
		}
	}
	name := st.allocate(className)
	st.typing["TypedDict"] = true
	// The fields' types first: nested classes are declared before this one.
	types := make([]string, props.Len())
	for i, m := range props.Members() {
		var fb strings.Builder
		// A field annotation starts a new line of brackets; 1 reserves NotRequired[.
		st.write(&fb, m.Value.(*jsonv.Object), childClassName(name, st.camelCase(m.Name)), 1, false)
		types[i] = fb.String()
	}
	required := requiredSet(o)
	lines := []string{"class " + name + "(TypedDict):"}
	for i, m := range props.Members() {
		if d, ok := describe(member(m.Value.(*jsonv.Object), "description")); ok {
			lines = append(lines, "    # "+d)
		}
		if required[m.Name] {
			lines = append(lines, "    "+m.Name+": "+types[i])
		} else {
			st.typing["NotRequired"] = true
			lines = append(lines, "    "+m.Name+": NotRequired["+types[i]+"]")
		}
	}
	if open {
		lines = append(lines, "    # Additional keys beyond those declared are allowed.")
	}
	if len(lines) == 1 {
		lines = append(lines, "    pass")
	}
	st.classes = append(st.classes, strings.Join(lines, "\n"))
	b.WriteString(name)
}

// isFieldName reports whether a JSON key can be declared as a class-syntax TypedDict field
// under its exact spelling: a bare, NFKC-stable identifier that is no hard keyword and is
// not name-mangled (a leading __ without a trailing __).
func isFieldName(name string) bool {
	if !isBareIdentifier(name) || pyReserved[name] {
		return false
	}
	return !(strings.HasPrefix(name, "__") && !strings.HasSuffix(name, "__"))
}

// scalar renders a scalar node as Literal[…] for const or enum, else the broad type.
func (st *pyState) scalar(o *jsonv.Object, broad string) string {
	if c, ok := o.Get("const"); ok {
		st.typing["Literal"] = true
		return "Literal[" + pyLiteral(c) + "]"
	}
	if e, ok := o.Get("enum"); ok {
		st.typing["Literal"] = true
		vals := e.([]any)
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = pyLiteral(v)
		}
		return "Literal[" + strings.Join(parts, ", ") + "]"
	}
	return broad
}

// pyLiteral renders a scalar as Python source: True/False, JSON-quoted strings (every JSON
// escape is a Python escape of the same character), and numbers as JavaScript prints them,
// except integral values beyond 2^53, which get their exact digits.
func pyLiteral(v any) string {
	switch x := v.(type) {
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		return jsonString(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) > 1<<53-1 {
			return new(big.Float).SetFloat64(x).Text('f', 0)
		}
	}
	return jsonLiteral(v)
}

// describe collapses a description to one printable line (docs/behaviour.md §10.3): whitespace runs become
// one space, the other C0 and C1 controls \xNN escapes. An empty result is no description.
func describe(description any) (string, bool) {
	s, ok := description.(string)
	if !ok {
		return "", false
	}
	s = collapseSpace(s)
	if strings.IndexFunc(s, isUnprintable) >= 0 {
		var b strings.Builder
		for _, r := range s {
			if isUnprintable(r) {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				b.WriteRune(r)
			}
		}
		s = b.String()
	}
	return s, s != ""
}

func isUnprintable(r rune) bool {
	return r <= 0x08 || (r >= 0x0E && r <= 0x1F) || (r >= 0x7F && r <= 0x9F)
}

// pyDoc renders a one-line docstring for a tool description.
func pyDoc(description any) (string, bool) {
	d, ok := describe(description)
	if !ok {
		return "", false
	}
	d = strings.ReplaceAll(d, `\`, `\\`)
	d = strings.ReplaceAll(d, `"`, `\"`)
	return `"""` + d + `"""`, true
}

// camelCase derives a class-name segment from a tool or field name: runs of characters
// that cannot continue an identifier, and runs of underscores, split words; each word's
// first character is upper-cased; a result that cannot start an identifier gets a Tool
// prefix. The result is NFKC-normalized, which is how Python compiles identifiers.
func (st *pyState) camelCase(raw string) string {
	var b strings.Builder
	word := false
	for _, r := range raw {
		if r == '_' || !isXIDContinue(r) {
			word = false
			continue
		}
		if !word {
			word = true
			// JavaScript upper-cases the first UTF-16 code unit, which leaves a
			// supplementary character as it is.
			if r < 0x10000 {
				b.WriteString(st.upper.String(string(r)))
				continue
			}
		}
		b.WriteRune(r)
	}
	joined := norm.NFKC.String(b.String())
	if r := firstRune(joined); r < 0 || !isXIDStart(r) {
		joined = "Tool" + joined
	}
	return norm.NFKC.String(joined)
}

func firstRune(s string) rune {
	for _, r := range s {
		return r
	}
	return -1
}

// capClassName cuts a class-name base to maxClassNameBase UTF-16 code units without
// splitting a supplementary character.
func capClassName(base string) string {
	if utf16Len(base) <= maxClassNameBase {
		return base
	}
	n := 0
	for i, r := range base {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if n+w > maxClassNameBase {
			return base[:i]
		}
		n += w
	}
	return base
}

// childClassName appends a segment to a class-name base. The join is normalized because two
// normalized strings can compose across it.
func childClassName(base, segment string) string {
	return capClassName(norm.NFKC.String(base + segment))
}

// allocate reserves a unique class name, suffixing 2, 3, … on a collision.
func (st *pyState) allocate(base string) string {
	capped := capClassName(base)
	name := capped
	if st.used[name] {
		n := st.next[capped]
		if n == 0 {
			n = 2
		}
		for st.used[capped+strconv.Itoa(n)] {
			n++
		}
		name = capped + strconv.Itoa(n)
		st.next[capped] = n + 1
	}
	st.used[name] = true
	return name
}
