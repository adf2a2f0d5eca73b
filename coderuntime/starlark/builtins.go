package starlark

import (
	"fmt"
	"strings"

	"github.com/dsh-go/dsh/jsonv"
	"go.starlark.net/lib/math"
	star "go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// predeclared returns the names every run gets besides its bindings. They hold no state,
// so one set serves every run.
func predeclared() star.StringDict {
	env := star.StringDict{
		"print": star.NewBuiltin("print", printBuiltin),
		"sum":   star.NewBuiltin("sum", sumBuiltin),
		"asyncio": &starlarkstruct.Module{Name: "asyncio", Members: star.StringDict{
			"gather": star.NewBuiltin("gather", gatherBuiltin),
		}},
		"json": &starlarkstruct.Module{Name: "json", Members: star.StringDict{
			"dumps": star.NewBuiltin("dumps", dumpsBuiltin),
			"loads": star.NewBuiltin("loads", loadsBuiltin),
		}},
		"math":         math.Module,
		fstringBuiltin: star.NewBuiltin("f-string", fstringCall),
	}
	env.Freeze()
	return env
}

// printBuiltin is Python's print(*values, sep=" ", end="\n", flush=False) with one log
// entry per call: the values (strings as they are, others as str() shows them) joined by
// sep, then end, without the one final line break.
func printBuiltin(thread *star.Thread, b *star.Builtin, args star.Tuple, kwargs []star.Tuple) (star.Value, error) {
	sep, end := " ", "\n"
	for _, kv := range kwargs {
		name := string(kv[0].(star.String))
		switch name {
		case "sep", "end":
			text := " "
			if name == "end" {
				text = "\n"
			}
			switch v := kv[1].(type) {
			case star.String:
				text = string(v)
			case star.NoneType:
			default:
				return nil, fmt.Errorf("print: %s must be None or a string, not %s", name, v.Type())
			}
			if name == "sep" {
				sep = text
			} else {
				end = text
			}
		case "flush":
		default:
			return nil, fmt.Errorf("print: unexpected keyword argument %s", name)
		}
	}
	var buf strings.Builder
	for i, v := range args {
		if i > 0 {
			buf.WriteString(sep)
		}
		if s, ok := v.(star.String); ok {
			buf.WriteString(string(s))
		} else {
			buf.WriteString(v.String())
		}
	}
	buf.WriteString(end)
	text := strings.TrimSuffix(buf.String(), "\n")
	if r := runOf(thread); r != nil {
		r.log(text)
	} else if thread.Print != nil {
		thread.Print(thread, text)
	}
	return star.None, nil
}

// sumBuiltin is Python's sum(iterable, start=0).
func sumBuiltin(thread *star.Thread, b *star.Builtin, args star.Tuple, kwargs []star.Tuple) (star.Value, error) {
	var iterable star.Iterable
	var acc star.Value = star.MakeInt(0)
	if err := star.UnpackArgs(b.Name(), args, kwargs, "iterable", &iterable, "start?", &acc); err != nil {
		return nil, err
	}
	it := iterable.Iterate()
	defer it.Done()
	var x star.Value
	for it.Next(&x) {
		sum, err := star.Binary(syntax.PLUS, acc, x)
		if err != nil {
			return nil, fmt.Errorf("sum: %w", err)
		}
		acc = sum
	}
	return acc, nil
}

// gatherBuiltin is asyncio.gather(*values): the values in a list. The binding calls that
// produced them have already completed, one after another.
func gatherBuiltin(thread *star.Thread, b *star.Builtin, args star.Tuple, kwargs []star.Tuple) (star.Value, error) {
	for _, kv := range kwargs {
		name := string(kv[0].(star.String))
		if name != "return_exceptions" {
			return nil, fmt.Errorf("gather: unexpected keyword argument %s", name)
		}
		if kv[1].Truth() {
			return nil, fmt.Errorf("gather: return_exceptions=True is not supported: in Starlark a failed call has already stopped the program")
		}
	}
	return star.NewList(append([]star.Value(nil), args...)), nil
}

// dumpsBuiltin is json.dumps(value, indent=None): the JSON text as JSON.stringify writes
// it (compact, or indented by indent spaces or by the indent string).
func dumpsBuiltin(thread *star.Thread, b *star.Builtin, args star.Tuple, kwargs []star.Tuple) (star.Value, error) {
	var value, indent star.Value = nil, star.None
	if err := star.UnpackArgs("dumps", args, kwargs, "obj", &value, "indent?", &indent); err != nil {
		return nil, err
	}
	v, err := toJSON(value)
	if err != nil {
		return nil, fmt.Errorf("dumps: %w", err)
	}
	var text []byte
	switch ind := indent.(type) {
	case star.NoneType:
		text, err = jsonv.Marshal(v)
	case star.Int:
		n, ok := ind.Int64()
		if !ok {
			return nil, fmt.Errorf("dumps: indent %s is too large", ind)
		}
		text, err = jsonv.MarshalIndent(v, strings.Repeat(" ", int(max(0, min(n, 10)))))
	case star.String:
		text, err = jsonv.MarshalIndent(v, string(ind))
	default:
		return nil, fmt.Errorf("dumps: indent must be None, an int or a string, not %s", indent.Type())
	}
	if err != nil {
		return nil, fmt.Errorf("dumps: %w", err)
	}
	return star.String(text), nil
}

// loadsBuiltin is json.loads(text): a JSON value as Starlark values, as binding results
// are converted.
func loadsBuiltin(thread *star.Thread, b *star.Builtin, args star.Tuple, kwargs []star.Tuple) (star.Value, error) {
	var text string
	if err := star.UnpackArgs("loads", args, kwargs, "s", &text); err != nil {
		return nil, err
	}
	v, err := jsonv.ParseString(text)
	if err != nil {
		return nil, fmt.Errorf("loads: %w", err)
	}
	return fromJSON(v)
}
