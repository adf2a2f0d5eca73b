package tool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/schema"
)

// CodeRunner runs run_code programs. Code Mode installs one with SetCodeRunner; without one,
// run_code is still presented in code and both modes but every call fails with a message
// that names the missing runtime.
type CodeRunner interface {
	// Language is the program language ("typescript" or "python"); it selects the run_code
	// schema flavour.
	Language() string
	// RunCode runs one program for the run_code call and returns its canonical value
	// {logs, result?}, or an error for a failed run.
	RunCode(ctx context.Context, call *Call, code string) (any, error)
}

type runnerBox struct {
	runner CodeRunner
	entry  *entry
	err    error // the flavour error for an unknown language
}

// SetCodeRunner installs the Code Mode runner; the returned function uninstalls it.
func (r *Registry) SetCodeRunner(cr CodeRunner) (remove func()) {
	box := &runnerBox{runner: cr}
	box.entry, box.err = r.buildTransport(cr.Language())
	r.runner.Store(box)
	r.logNotify(Change{Kind: ChangeRegistered, Name: RunCodeName, Scope: r.root})
	return func() {
		if r.runner.CompareAndSwap(box, nil) {
			r.logNotify(Change{Kind: ChangeUnregistered, Name: RunCodeName, Scope: r.root})
		}
	}
}

// CodeRunner returns the installed runner, or nil.
func (r *Registry) CodeRunner() CodeRunner {
	if b := r.runner.Load(); b != nil {
		return b.runner
	}
	return nil
}

// transportEntry returns the single shared run_code definition: the flavour of the installed
// runner's language, or TypeScript when none is installed.
func (r *Registry) transportEntry() *entry {
	if b := r.runner.Load(); b != nil {
		if b.err != nil {
			return &entry{def: b.entry.def, out: b.entry.out, paramsErr: b.err}
		}
		return b.entry
	}
	r.transportOnce.Do(func() { r.transport, _ = r.buildTransport("typescript") })
	return r.transport
}

var runCodeFlavours = map[string]struct{ description, code string }{
	"typescript": {
		description: "Run a TypeScript program that calls the available tools. Two required arguments: " +
			"`code`, the body of an async function (erasable TypeScript syntax only; top-level `await` " +
			"and `return` work), and `description`, a short label of what the program does. Call a tool " +
			"with `await tools.name(args)` as the SDK in the system prompt declares. Only what the program " +
			"prints or returns comes back to you, so keep it focused. Images from successful tool results " +
			"are attached after the run.",
		code: "The program: the body of an async TypeScript function.",
	},
	"python": {
		description: "Run a Starlark (Python-flavoured) program that calls the available tools. Two required " +
			"arguments: `code`, the body of an async function (top-level `await` and `return` work), and " +
			"`description`, a short label of what the program does. Call a tool with " +
			"`await tools.name(args)` as the SDK in the system prompt declares. Use `print(...)` and/or " +
			"`return <value>` for output, and keep it focused. Images from successful tool results are " +
			"attached after the run.",
		code: "The program: the body of an async Python function.",
	},
}

const runCodeLabelDescription = "What this program does, in active voice and 5-10 words (shown in the UI), " +
	`for example "Count TODO markers across packages" or "Read the failing test and its fixture".`

// runCodeOutputSchema is the closed {logs, result?} object of docs/behaviour.md §10.4.
func runCodeOutputSchema() *jsonv.Object {
	items := jsonv.NewObject(jsonv.Member{Name: "type", Value: "string"})
	logs := jsonv.NewObject(jsonv.Member{Name: "type", Value: "array"}, jsonv.Member{Name: "items", Value: items})
	props := jsonv.NewObject(jsonv.Member{Name: "logs", Value: logs}, jsonv.Member{Name: "result", Value: &jsonv.Object{}})
	return jsonv.NewObject(
		jsonv.Member{Name: "type", Value: "object"},
		jsonv.Member{Name: "properties", Value: props},
		jsonv.Member{Name: "required", Value: []any{"logs"}},
		jsonv.Member{Name: "additionalProperties", Value: false},
	)
}

func (r *Registry) buildTransport(language string) (*entry, error) {
	flavour, ok := runCodeFlavours[language]
	var flavourErr error
	if !ok {
		flavourErr = fmt.Errorf("dsh-tools: no run_code schema flavor registered for runtime language %q (known: \"typescript\", \"python\")", language)
		flavour = runCodeFlavours["typescript"]
	}
	str := func(desc string) *jsonv.Object {
		return jsonv.NewObject(jsonv.Member{Name: "type", Value: "string"}, jsonv.Member{Name: "description", Value: desc})
	}
	params := jsonv.NewObject(
		jsonv.Member{Name: "type", Value: "object"},
		jsonv.Member{Name: "properties", Value: jsonv.NewObject(
			jsonv.Member{Name: "code", Value: str(flavour.code)},
			jsonv.Member{Name: "description", Value: str(runCodeLabelDescription)},
		)},
		jsonv.Member{Name: "required", Value: []any{"code", "description"}},
	)
	argSchema := schema.MustCompile(params)
	def := &Definition{
		Name:        RunCodeName,
		Description: flavour.description,
		Parameters:  params,
		Output:      Output{Schema: runCodeOutputSchema(), Render: renderRunCode},
		Execute: func(ctx context.Context, call *Call) (any, error) {
			if vs := argSchema.Validate(call.args, ""); len(vs) > 0 {
				return nil, argsError(vs)
			}
			o := call.args.(*jsonv.Object)
			code, _ := o.Get("code")
			desc, _ := o.Get("description")
			if strings.TrimSpace(desc.(string)) == "" {
				return nil, errors.New("invalid description: expected a non-empty string")
			}
			b := r.runner.Load()
			if b == nil || b.runner == nil {
				mode := r.ModeFor(call.agent)
				return nil, missingRuntime(mode)
			}
			return b.runner.RunCode(ctx, call, code.(string))
		},
		PresentCall: func(args any) *card.Call {
			o, ok := args.(*jsonv.Object)
			if !ok {
				return nil
			}
			code, _ := o.Get("code")
			desc, _ := o.Get("description")
			c, ok1 := code.(string)
			d, ok2 := desc.(string)
			if !ok1 || !ok2 {
				return nil
			}
			return &card.Call{Card: card.Generic, Title: d, Kind: card.KindExecute, RawInput: c}
		},
	}
	out := schema.MustCompile(def.Output.Schema)
	return &entry{def: def, out: out, params: params}, flavourErr
}

// renderRunCode renders {logs, result?} (docs/behaviour.md §10.4): logs joined by newlines, then the result
// (a string raw, anything else pretty-printed with compact containers past depth 5).
func renderRunCode(_, value any) ([]content.Block, error) {
	o, _ := value.(*jsonv.Object)
	var parts []string
	if logs, ok := o.Get("logs"); ok {
		arr, _ := logs.([]any)
		lines := make([]string, len(arr))
		for i, l := range arr {
			lines[i], _ = l.(string)
		}
		if s := strings.Join(lines, "\n"); s != "" {
			parts = append(parts, s)
		}
	}
	if res, ok := o.Get("result"); ok {
		var s string
		if str, isStr := res.(string); isStr {
			s = str
		} else {
			b, err := prettyCapped(nil, res, 0)
			if err != nil {
				return nil, err
			}
			s = string(b)
		}
		if s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return content.Texts("(run_code completed with no output)"), nil
	}
	return content.Texts(strings.Join(parts, "\n")), nil
}

// argsError is the INVALID_ARGS error for the given violations.
func argsError(violations []string) error {
	return &Error{Name: "ToolArgsError", Code: CodeInvalidArgs, Message: "invalid arguments: " + strings.Join(violations, "; ")}
}

// prettyCapped appends v pretty-printed like JSON.stringify(v, null, 2), except that a
// container at nesting depth 5 or more is written compactly, capping indentation at 10
// characters and keeping the output linear in the value's size.
func prettyCapped(dst []byte, v any, depth int) ([]byte, error) {
	const maxDepth = 5
	indent := func(d int) []byte {
		dst = append(dst, '\n')
		for range d {
			dst = append(dst, ' ', ' ')
		}
		return dst
	}
	switch x := v.(type) {
	case []any:
		if depth >= maxDepth || len(x) == 0 {
			break
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = indent(depth + 1)
			var err error
			if dst, err = prettyCapped(dst, e, depth+1); err != nil {
				return nil, err
			}
		}
		dst = indent(depth)
		return append(dst, ']'), nil
	case *jsonv.Object:
		if depth >= maxDepth || x.Len() == 0 {
			break
		}
		dst = append(dst, '{')
		for i, m := range x.Members() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = indent(depth + 1)
			k, err := jsonv.Marshal(m.Name)
			if err != nil {
				return nil, err
			}
			dst = append(append(dst, k...), ':', ' ')
			if dst, err = prettyCapped(dst, m.Value, depth+1); err != nil {
				return nil, err
			}
		}
		dst = indent(depth)
		return append(dst, '}'), nil
	}
	b, err := jsonv.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}
