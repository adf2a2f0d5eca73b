package tool

import (
	"context"
	"fmt"
	"reflect"
	"time"
	"unsafe"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/schema"
)

// Func is the body of a typed tool: it receives the validated, decoded arguments and returns
// the canonical output value.
type Func[In, Out any] func(ctx context.Context, call *Call, in In) (Out, error)

// Option configures a typed tool built by New.
type Option interface {
	apply(s spec) error
}

type optionFunc func(s spec) error

func (f optionFunc) apply(s spec) error { return f(s) }

type typedSpec[In, Out any] struct {
	def         *Definition
	inSchema    any
	outSchema   any
	render      func(In, Out) ([]content.Block, error)
	meta        func(In, Out) (any, error)
	parallelIf  func(In) bool
	presentCall func(In) *card.Call
	presentRes  func(In, card.ToolResult) *card.Result
	strict      bool
}

// spec is the type-erased view options use to configure a typedSpec.
type spec interface {
	definition() *Definition
	setSchemas(in, out any)
	setStrict()
	set(option string, fn any) error
}

func (s *typedSpec[In, Out]) setStrict() { s.strict = true }

func (s *typedSpec[In, Out]) definition() *Definition { return s.def }

func (s *typedSpec[In, Out]) setSchemas(in, out any) {
	if in != nil {
		s.inSchema = in
	}
	if out != nil {
		s.outSchema = out
	}
}

func (s *typedSpec[In, Out]) set(option string, fn any) error {
	ok := false
	switch f := fn.(type) {
	case func(In, Out) ([]content.Block, error):
		s.render, ok = f, option == "Render"
	case func(In, Out) (any, error):
		s.meta, ok = f, option == "Meta"
	case func(In) bool:
		s.parallelIf, ok = f, option == "ConcurrencySafeIf"
	case func(In) *card.Call:
		s.presentCall, ok = f, option == "CallCard"
	case func(In, card.ToolResult) *card.Result:
		s.presentRes, ok = f, option == "ResultCard"
	}
	if !ok {
		return fmt.Errorf("tool %q: option %s was given a %T, which does not fit a tool with arguments %v and output %v",
			s.def.Name, option, fn, reflect.TypeFor[In](), reflect.TypeFor[Out]())
	}
	return nil
}

func setOption(option string, fn any) Option {
	return optionFunc(func(s spec) error { return s.set(option, fn) })
}

// WithTimeout declares a cooperative deadline for the timeout policy.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(s spec) error {
		if d <= 0 {
			return fmt.Errorf("defineTool(%s): timeoutMs must be a positive finite number", s.definition().Name)
		}
		s.definition().Timeout = d
		return nil
	})
}

// ConcurrencySafe declares every call of the tool safe to run in parallel with other safe
// calls. Calls whose arguments fail validation stay exclusive.
func ConcurrencySafe() Option {
	return optionFunc(func(s spec) error {
		s.definition().ConcurrencySafe = func(any) bool { return true }
		return nil
	})
}

// ConcurrencySafeIf declares a call concurrency-safe when fn returns true for its arguments.
// Calls whose arguments fail validation are exclusive without calling fn.
func ConcurrencySafeIf[In any](fn func(in In) bool) Option {
	return setOption("ConcurrencySafeIf", fn)
}

// Strict closes the inferred argument schema: every object inferred from a struct gets
// additionalProperties: false, so an argument the tool does not declare fails the call with
// INVALID_ARGS instead of being ignored. It also sets Definition.Strict, which asks a model
// API with a strict tool mode (OpenAI, DeepSeek) to hold the model to the schema; such a
// mode may demand more of the schema (every property required), which is the caller's
// choice. An explicit InputSchema is used as given.
func Strict() Option {
	return optionFunc(func(s spec) error {
		s.setStrict()
		s.definition().Strict = true
		return nil
	})
}

// Render sets how a validated output is projected to model content. The default renders a
// string output raw and anything else as indented JSON.
func Render[In, Out any](fn func(in In, out Out) ([]content.Block, error)) Option {
	return setOption("Render", fn)
}

// Meta sets the presentation meta projection persisted with top-level results.
func Meta[In, Out any](fn func(in In, out Out) (any, error)) Option {
	return setOption("Meta", fn)
}

// CallCard sets the pending UI card presenter. Arguments that fail validation get the
// generic card without calling fn.
func CallCard[In any](fn func(in In) *card.Call) Option {
	return setOption("CallCard", fn)
}

// ResultCard sets the completed UI card presenter. It also runs on log replay, so it must
// depend only on its inputs.
func ResultCard[In any](fn func(in In, res card.ToolResult) *card.Result) Option {
	return setOption("ResultCard", fn)
}

// FinalizeContent sets the last-mile content transform run once per call, whatever the
// outcome.
func FinalizeContent(fn func(exec *Execution, res *Result) ([]content.Block, error)) Option {
	return optionFunc(func(s spec) error {
		s.definition().FinalizeContent = fn
		return nil
	})
}

// InputSchema overrides the inferred argument schema with an explicit one (a jsonv value).
func InputSchema(raw any) Option {
	return optionFunc(func(s spec) error { s.setSchemas(raw, nil); return nil })
}

// OutputSchema overrides the inferred output schema with an explicit one (a jsonv value).
func OutputSchema(raw any) Option {
	return optionFunc(func(s spec) error { s.setSchemas(nil, raw); return nil })
}

// New defines a typed tool. The argument schema is inferred from In and the output schema
// from Out (json and jsonschema struct tags) and both must lie in the supported subset.
// Inferred argument objects are open: an argument In does not declare is ignored, as a
// model sometimes adds one (Strict closes them).
// Arguments are validated against the schema inside the body stage (failing INVALID_ARGS) and
// decoded into In; the returned Out is validated against the output schema (failing
// INVALID_TOOL_OUTPUT) and rendered.
func New[In, Out any](name, description string, fn Func[In, Out], opts ...Option) (*Definition, error) {
	s := &typedSpec[In, Out]{def: &Definition{Name: name, Description: description}}
	for _, o := range opts {
		if err := o.apply(s); err != nil {
			return nil, err // option errors name the tool themselves
		}
	}
	var in *schema.Schema
	var err error
	if s.inSchema != nil {
		in, err = schema.Compile(s.inSchema)
	} else {
		in, err = schema.ForTypeWith(reflect.TypeFor[In](), schema.Inference{Open: !s.strict})
	}
	if err != nil {
		return nil, fmt.Errorf("tool %q arguments: %w", name, err)
	}
	if t, _ := objectType(in.Raw()); t != "object" {
		return nil, fmt.Errorf("tool %q arguments: the schema of %s must have type \"object\"", name, reflect.TypeFor[In]())
	}
	var out *schema.Schema
	if s.outSchema != nil {
		out, err = schema.Compile(s.outSchema)
	} else {
		out, err = schema.For[Out]()
	}
	if err != nil {
		return nil, fmt.Errorf("tool %q output: %w", name, err)
	}
	d := s.def
	d.Parameters = in.Raw()
	d.Output.Schema = out.Raw()

	// Flat argument and output types convert straight between the parsed value and the Go
	// value; the others (and any value the direct conversion declines) go through json v2.
	inCodec := flatCodecFor(reflect.TypeFor[In]())
	outCodec := flatCodecFor(reflect.TypeFor[Out]())
	// Arguments that certainly conform to an argument schema of the flat shape need not go
	// through the general validator; the others do, and it reports their violations.
	inFlat := flatSchemaOf(in.Raw())
	decodeIn := func(args any) (In, error) {
		if inFlat == nil || !inFlat.valid(args) {
			if vs := in.Validate(args, ""); len(vs) > 0 {
				var zero In
				return zero, argsError(vs)
			}
		}
		if inCodec != nil {
			// v stays on the stack: the direct conversion writes it through a pointer
			// that does not escape, and the general decoder gets a variable of its own.
			var v In
			if inCodec.decode(args, unsafe.Pointer(&v)) {
				return v, nil
			}
		}
		return decodeArgs[In](args)
	}
	body := func(ctx context.Context, call *Call) (value any, flat bool, err error) {
		v, err := decodeIn(call.args)
		if err != nil {
			return nil, false, err
		}
		res, err := fn(ctx, call, v)
		if err != nil {
			return nil, false, err
		}
		if outCodec != nil {
			if value, ok := outCodec.encode(reflect.ValueOf(&res).Elem()); ok {
				return value, true, nil
			}
		}
		value, err = jsonv.FromGo(res)
		if err != nil {
			// Encoding ran the output's own marshalling code and failed: the analogue of a
			// snapshot that threw (docs/behaviour.md §2.4).
			return nil, false, outputError(name, "value snapshot failed: "+ErrorMessage(err))
		}
		return value, false, nil
	}
	// The value is marked as the body's own, which the pipeline adopts without a snapshot;
	// a replaced Execute returns values of its own, which are snapshotted like any body's.
	d.Execute = func(ctx context.Context, call *Call) (any, error) {
		v, flat, err := body(ctx, call)
		if err != nil {
			return nil, err
		}
		return call.own(v, flat), nil
	}
	d.trusted = true
	if s.outSchema == nil {
		d.flatOut = outCodec
	}
	if s.render != nil {
		d.Output.Render = func(args, value any) ([]content.Block, error) {
			a, err := decodeIn(args)
			if err != nil {
				return nil, err
			}
			var o Out
			if err := jsonv.Decode(value, &o); err != nil {
				return nil, err
			}
			return s.render(a, o)
		}
	} else {
		d.Output.Render = DefaultRender
	}
	if s.meta != nil {
		d.Output.PresentationMeta = func(args, value any) (any, error) {
			a, err := decodeIn(args)
			if err != nil {
				return nil, err
			}
			var o Out
			if err := jsonv.Decode(value, &o); err != nil {
				return nil, err
			}
			m, err := s.meta(a, o)
			if err != nil || m == nil {
				return nil, err
			}
			return jsonv.FromGo(m)
		}
	}
	if s.parallelIf != nil {
		d.ConcurrencySafe = func(args any) bool {
			a, err := decodeIn(args)
			return err == nil && s.parallelIf(a)
		}
	} else if d.ConcurrencySafe != nil {
		d.ConcurrencySafe = func(args any) bool {
			_, err := decodeIn(args)
			return err == nil
		}
	}
	if s.presentCall != nil {
		d.PresentCall = func(args any) (c *card.Call) {
			defer func() {
				if recover() != nil {
					c = nil
				}
			}()
			a, err := decodeIn(args)
			if err != nil {
				return nil
			}
			return s.presentCall(a)
		}
	}
	if s.presentRes != nil {
		d.PresentResult = func(args any, res card.ToolResult) (c *card.Result) {
			defer func() {
				if recover() != nil {
					c = nil
				}
			}()
			a, err := decodeIn(args)
			if err != nil {
				return nil
			}
			return s.presentRes(a, res)
		}
	}
	return d, nil
}

// decodeArgs decodes checked arguments into an In with json v2, the general path.
func decodeArgs[In any](args any) (In, error) {
	v := new(In)
	if err := jsonv.Decode(args, v); err != nil {
		return *v, &Error{Name: "ToolArgsError", Code: CodeInvalidArgs, Message: "invalid arguments: " + err.Error()}
	}
	return *v, nil
}

// Must returns def or panics with err; for package-level tool definitions whose types are
// fixed at compile time.
func Must(def *Definition, err error) *Definition {
	if err != nil {
		panic(err)
	}
	return def
}

// NewRaw defines a tool from explicit JSON schemas, for tools known only at run time (MCP).
// Arguments are not validated by the registry; the output is validated against outSchema and
// rendered with DefaultRender.
func NewRaw(name, description string, params, outSchema any, fn func(ctx context.Context, call *Call) (any, error)) *Definition {
	return &Definition{
		Name:        name,
		Description: description,
		Parameters:  params,
		Output:      Output{Schema: outSchema, Render: DefaultRender},
		Execute:     fn,
	}
}

// DefaultRender renders a string value as its text and any other value as JSON indented by
// two spaces.
func DefaultRender(_, value any) ([]content.Block, error) {
	s, err := defaultText(value)
	if err != nil {
		return nil, err
	}
	return content.Texts(s), nil
}

// defaultText is the text of DefaultRender's one block.
func defaultText(value any) (string, error) {
	if s, ok := value.(string); ok {
		return s, nil
	}
	b, err := jsonv.MarshalIndent(value, "  ")
	if err != nil {
		return "", err
	}
	// b is this call's own buffer and is never written again: the text can share it.
	return unsafe.String(unsafe.SliceData(b), len(b)), nil
}

// Args returns a private deep copy of the call's arguments.
func (c *Call) Args() any {
	v, _ := c.Execution.Args()
	return v
}

func objectType(raw any) (string, bool) {
	o, ok := raw.(*jsonv.Object)
	if !ok {
		return "", false
	}
	t, ok := o.Get("type")
	s, _ := t.(string)
	return s, ok
}
