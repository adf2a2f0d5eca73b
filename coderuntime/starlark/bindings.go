package starlark

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/jsonv"
	star "go.starlark.net/starlark"
)

// namespace is a binding namespace as the program sees it: `tools.name(args)` and
// `tools["my-tool"](args)` both find the function, `"name" in tools` tests for one and
// dir(tools) lists them. It is immutable.
type namespace struct {
	global string
	funcs  map[string]*bindingFunc
	names  []string // sorted
}

var (
	_ star.HasAttrs = (*namespace)(nil)
	_ star.Mapping  = (*namespace)(nil)
)

func newNamespace(ns coderuntime.Namespace) *namespace {
	n := &namespace{global: ns.Global, funcs: make(map[string]*bindingFunc, len(ns.Functions))}
	for name, fn := range ns.Functions {
		if fn == nil {
			continue
		}
		n.funcs[name] = &bindingFunc{global: ns.Global, name: name, fn: fn, class: ns.ErrorClass}
		n.names = append(n.names, name)
	}
	slices.Sort(n.names)
	return n
}

func (n *namespace) String() string        { return "<namespace " + n.global + ">" }
func (n *namespace) Type() string          { return "namespace" }
func (n *namespace) Freeze()               {}
func (n *namespace) Truth() star.Bool      { return star.True }
func (n *namespace) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: namespace") }

// Attr returns the function name; an unknown name is an error naming the binding.
func (n *namespace) Attr(name string) (star.Value, error) {
	if f, ok := n.funcs[name]; ok {
		return f, nil
	}
	return nil, star.NoSuchAttrError(unknownBinding(n.global, name))
}

// AttrNames lists the function names in code-unit order.
func (n *namespace) AttrNames() []string { return slices.Clone(n.names) }

// Get implements subscript access and the `in` operator.
func (n *namespace) Get(k star.Value) (star.Value, bool, error) {
	s, ok := k.(star.String)
	if !ok {
		return nil, false, fmt.Errorf("%s: binding names are strings, got %s", n.global, k.Type())
	}
	f, ok := n.funcs[string(s)]
	if !ok {
		return nil, false, nil
	}
	return f, true, nil
}

func unknownBinding(global, name string) string {
	return "unknown binding " + quote(global+"."+name)
}

// quote writes s as a JSON string, the way the host's messages quote names.
func quote(s string) string {
	b, err := jsonv.Marshal(s)
	if err != nil { // invalid UTF-8 cannot come from a binding declaration
		return strconv.Quote(s)
	}
	return string(b)
}

// bindingFunc is one host function. Calling it converts the argument to lossless JSON,
// invokes the host function (the program waits: binding calls run one at a time) and
// converts the result back; a failure stops the program with a callError.
type bindingFunc struct {
	global, name string
	fn           coderuntime.Func
	class        *coderuntime.ErrorClass
}

var _ star.Callable = (*bindingFunc)(nil)

func (f *bindingFunc) Name() string          { return f.name }
func (f *bindingFunc) String() string        { return "<binding " + quote(f.global+"."+f.name) + ">" }
func (f *bindingFunc) Type() string          { return "binding" }
func (f *bindingFunc) Freeze()               {}
func (f *bindingFunc) Truth() star.Bool      { return star.True }
func (f *bindingFunc) Hash() (uint32, error) { return star.String(f.global + "." + f.name).Hash() }

// CallInternal takes the arguments object positionally or as the keyword `args`, the
// parameter name the Python SDK declares.
func (f *bindingFunc) CallInternal(thread *star.Thread, args star.Tuple, kwargs []star.Tuple) (star.Value, error) {
	var arg star.Value
	switch {
	case len(args) == 1 && len(kwargs) == 0:
		arg = args[0]
	case len(args) == 0 && len(kwargs) == 1 && kwargs[0][0] == star.String("args"):
		arg = kwargs[0][1]
	case len(args) == 0 && len(kwargs) == 0:
		// Like an undefined argument in JavaScript: not lossless JSON.
		return nil, f.failure("binding arguments must be lossless JSON")
	default:
		return nil, fmt.Errorf("%s.%s takes one argument (the arguments dict), got %d positional and %d keyword arguments",
			f.global, f.name, len(args), len(kwargs))
	}
	value, err := toJSON(arg)
	if err != nil {
		return nil, f.failure("binding arguments must be lossless JSON")
	}
	r := runOf(thread)
	result, err := r.call(f, value)
	if err != nil {
		return nil, err
	}
	return fromJSON(result)
}

// failure is the error a failed call stops the program with.
func (f *bindingFunc) failure(message string) *callError {
	return &callError{class: f.class, name: f.name, message: message}
}

// callError is a failed binding call. Starlark cannot catch it, so it ends the program; its
// text is the last line of the traceback: "<ErrorClass>: <function name>: <message>", with
// "Error" when the namespace declares no error class.
type callError struct {
	class   *coderuntime.ErrorClass
	name    string
	message string
}

func (e *callError) Error() string {
	class := "Error"
	if e.class != nil {
		class = e.class.Name
	}
	return class + ": " + e.name + ": " + e.message
}

// errorClass is the value bound under a namespace's error class name. Starlark has no
// exceptions, so it cannot be raised or caught; it exists so that the name the SDK
// declares is defined, and it reports its name and member property.
type errorClass struct{ class coderuntime.ErrorClass }

var _ star.HasAttrs = (*errorClass)(nil)

func (c *errorClass) String() string        { return "<error class " + c.class.Name + ">" }
func (c *errorClass) Type() string          { return "error_class" }
func (c *errorClass) Freeze()               {}
func (c *errorClass) Truth() star.Bool      { return star.True }
func (c *errorClass) Hash() (uint32, error) { return star.String(c.class.Name).Hash() }

// Attr exposes __name__ (the class name) and member_name_property.
func (c *errorClass) Attr(name string) (star.Value, error) {
	switch name {
	case "__name__":
		return star.String(c.class.Name), nil
	case "member_name_property":
		return star.String(c.class.MemberNameProperty), nil
	}
	return nil, nil
}

func (c *errorClass) AttrNames() []string { return []string{"__name__", "member_name_property"} }
