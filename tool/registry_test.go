package tool_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/schema"
	"github.com/dsh-go/dsh/tool"
)

func TestNewRegistryMode(t *testing.T) {
	for _, m := range []tool.Mode{"", tool.ModeNative, tool.ModeCode, tool.ModeBoth} {
		reg, err := tool.NewRegistry(tool.Config{Mode: m})
		if err != nil {
			t.Fatalf("mode %q: %v", m, err)
		}
		want := m
		if want == "" {
			want = tool.ModeNative
		}
		if reg.Mode() != want || reg.ModeFor(nil) != want {
			t.Errorf("mode %q: Mode()=%q ModeFor(nil)=%q", m, reg.Mode(), reg.ModeFor(nil))
		}
	}
	if _, err := tool.NewRegistry(tool.Config{Mode: "codez"}); err == nil {
		t.Error("an invalid mode was accepted")
	}
}

// TestRegisterErrors pins docs/behaviour.md §3.3: the validation order and the exact messages.
func TestRegisterErrors(t *testing.T) {
	badSchema := js(t, `{"type":"string","pattern":"x"}`)
	noRender := func(name string) *tool.Definition {
		d := strTool(name, "")
		d.Output.Render = nil
		return d
	}
	with := func(d *tool.Definition, f func(*tool.Definition)) *tool.Definition { f(d); return d }
	tests := []struct {
		name  string
		def   *tool.Definition
		scope bool // register through a scope instead of globally
		want  string
	}{
		{"zero output", &tool.Definition{Name: "t", Execute: strTool("t", "").Execute},
			false, `tool "t" must declare output { schema, render, presentationMeta? }`},
		{"no render", noRender("t"), false, `tool "t" must declare output { schema, render, presentationMeta? }`},
		{"no render before a bad schema", with(noRender("t"), func(d *tool.Definition) { d.Output.Schema = badSchema }),
			false, `tool "t" must declare output { schema, render, presentationMeta? }`},
		{"no schema", with(strTool("t", ""), func(d *tool.Definition) { d.Output.Schema = nil }),
			false, `unsupported JSON schema: schema must be a schema object`},
		{"unsupported schema", with(strTool("t", ""), func(d *tool.Definition) { d.Output.Schema = badSchema }),
			false, `unsupported JSON schema: schema.pattern is not a supported keyword (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)`},
		{"schema before timeout", with(strTool("t", ""), func(d *tool.Definition) { d.Output.Schema = badSchema; d.Timeout = -1 }),
			false, `unsupported JSON schema: schema.pattern is not a supported keyword (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations)`},
		{"negative timeout", with(strTool("t", ""), func(d *tool.Definition) { d.Timeout = -time.Second }),
			false, `tool "t" timeoutMs must be a positive finite number`},
		{"timeout before reservation", with(strTool("run_code", ""), func(d *tool.Definition) { d.Timeout = -1 }),
			false, `tool "run_code" timeoutMs must be a positive finite number`},
		{"reserved globally", strTool("run_code", ""),
			false, `tool name "run_code" is reserved for the Code Mode presentation transport and cannot be registered or shadowed`},
		{"reserved in a scope", strTool("run_code", ""),
			true, `tool name "run_code" is reserved for the Code Mode presentation transport and cannot be registered or shadowed`},
		{"nil definition", nil, false, `tool definition is nil`},
	}
	for _, mode := range []tool.Mode{tool.ModeNative, tool.ModeCode, tool.ModeBoth} {
		for _, tt := range tests {
			t.Run(string(mode)+"/"+tt.name, func(t *testing.T) {
				reg := newReg(t, tool.Config{Mode: mode})
				var err error
				if tt.scope {
					_, err = reg.NewScope("a", nil).Register(tt.def)
				} else {
					_, err = reg.Register(tt.def)
				}
				if err == nil || err.Error() != tt.want {
					t.Fatalf("error = %v, want %q", err, tt.want)
				}
				if len(reg.Names(nil)) != 0 && mode == tool.ModeNative {
					t.Errorf("a rejected registration left %v", reg.Names(nil))
				}
			})
		}
	}
}

func TestRegisterSchemaErrorIsCoded(t *testing.T) {
	reg := newReg(t)
	d := strTool("t", "")
	d.Output.Schema = js(t, `{"anyOf":[]}`)
	_, err := reg.Register(d)
	var se *schema.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %T is not a *schema.Error", err)
	}
	if info := tool.InfoOf(err); info == nil || *info != (tool.Info{Name: "JsonSchemaError", Code: tool.CodeUnsupportedSchema}) {
		t.Errorf("info = %+v", info)
	}
}

func TestRegisterDuplicate(t *testing.T) {
	reg := newReg(t)
	register(t, reg, strTool("x", ""))
	_, err := reg.Register(strTool("x", ""))
	if want := "tool \"x\" is already registered (for a per-agent variant, register through that agent's `agent.ctx` instead)"; err == nil || err.Error() != want {
		t.Errorf("global duplicate: %v, want %q", err, want)
	}
	a := reg.NewScope("a", nil)
	register(t, a, strTool("y", ""))
	_, err = a.Register(strTool("y", ""))
	if want := `tool "y" is already registered in this scope`; err == nil || err.Error() != want {
		t.Errorf("scoped duplicate: %v, want %q", err, want)
	}
	// A scoped registration of an inherited name is a shadow, not a duplicate.
	register(t, a, strTool("x", "scoped"))
	// A failed duplicate does not create a layer that outlives it.
	b := reg.NewScope("b", nil)
	register(t, b, strTool("z", ""))
	undo := register(t, b, strTool("w", ""))
	undo()
	if _, err := b.Register(strTool("z", "")); err == nil {
		t.Fatal("duplicate accepted")
	}
	if got := reg.Names(b); !slices.Equal(got, []string{"x", "z"}) {
		t.Errorf("names = %v", got)
	}
}

// TestScopedVisibility pins docs/behaviour.md §3.4: a scoped tool is visible and executable for its scope
// only; elsewhere it is an unknown tool.
func TestScopedVisibility(t *testing.T) {
	reg := newReg(t)
	a := reg.NewScope("a", nil)
	other := reg.NewScope("other", nil)
	register(t, reg, strTool("shared", "ran:shared"))
	register(t, a, strTool("mine", "ran:mine"))

	if got := reg.Names(a); !slices.Equal(got, []string{"shared", "mine"}) {
		t.Errorf("Names(a) = %v", got)
	}
	if got := reg.Names(nil); !slices.Equal(got, []string{"shared"}) {
		t.Errorf("Names(nil) = %v", got)
	}
	if got := reg.Names(reg.Global()); !slices.Equal(got, []string{"shared"}) {
		t.Errorf("Names(global) = %v", got)
	}
	if got := reg.Names(other); !slices.Equal(got, []string{"shared"}) {
		t.Errorf("Names(other) = %v", got)
	}
	if got := run(reg, "mine", a); got != "ran:mine" {
		t.Errorf("run in a = %q", got)
	}
	for _, s := range []*tool.Scope{other, nil} {
		if got := run(reg, "mine", s); got != `Error: unknown tool "mine"` {
			t.Errorf("run outside a = %q", got)
		}
	}
	if reg.Get("mine", other) != nil || reg.Get("mine", nil) != nil || reg.Get("mine", a) == nil {
		t.Error("Get disagrees with the view")
	}
}

func TestShadowing(t *testing.T) {
	for _, scopedFirst := range []bool{true, false} {
		reg := newReg(t)
		a := reg.NewScope("a", nil)
		if scopedFirst {
			register(t, a, strTool("bash", "restricted-bash"))
			register(t, reg, strTool("bash", "global-bash"))
		} else {
			register(t, reg, strTool("bash", "global-bash"))
			register(t, a, strTool("bash", "restricted-bash"))
		}
		if got := run(reg, "bash", a); got != "restricted-bash" {
			t.Errorf("scopedFirst=%v: scoped run = %q", scopedFirst, got)
		}
		if got := run(reg, "bash", nil); got != "global-bash" {
			t.Errorf("scopedFirst=%v: global run = %q", scopedFirst, got)
		}
		schemas, err := reg.Schemas(a)
		if err != nil {
			t.Fatal(err)
		}
		if len(schemas) != 1 || schemas[0].Name != "bash" || schemas[0].Description != "tool bash" {
			t.Errorf("scopedFirst=%v: schemas = %+v", scopedFirst, schemas)
		}
		if d := reg.Get("bash", a); d == nil || d == reg.Get("bash", nil) {
			t.Errorf("Get returned the global definition for the scope")
		}
	}
}

// TestAncestorOverlay checks that a nearer ancestor's tool shadows a farther one and the
// global one, and that view order is global, ancestors farthest first, then own.
func TestAncestorOverlay(t *testing.T) {
	reg := newReg(t)
	root := reg.NewScope("root", nil)
	mid := reg.NewScope("mid", root)
	leaf := reg.NewScope("leaf", mid)
	register(t, reg, strTool("g", "global-g"))
	register(t, reg, strTool("x", "global-x"))
	register(t, root, strTool("x", "root-x"))
	register(t, root, strTool("r", "root-r"))
	register(t, mid, strTool("x", "mid-x"))
	register(t, leaf, strTool("l", "leaf-l"))
	if got := reg.Names(leaf); !slices.Equal(got, []string{"g", "x", "r", "l"}) {
		t.Errorf("Names(leaf) = %v", got)
	}
	for scope, want := range map[*tool.Scope]string{leaf: "mid-x", mid: "mid-x", root: "root-x", nil: "global-x"} {
		if got := run(reg, "x", scope); got != want {
			t.Errorf("x in %v = %q, want %q", scope.Name(), got, want)
		}
	}
	if got := reg.KnownNames(leaf); !slices.Equal(got, []string{"g", "x", "r", "l"}) {
		t.Errorf("KnownNames(leaf) = %v", got)
	}
}

// TestSchemas pins docs/behaviour.md §3.4: the whitelist projection, detached copies and the lossless check.
func TestSchemas(t *testing.T) {
	reg := newReg(t)
	params := js(t, `{"type":"object","properties":{"text":{"type":"string"}}}`)
	d := strTool("echo", "")
	d.Description = "echo arguments back"
	d.Parameters = params
	d.Timeout = time.Second
	d.ConcurrencySafe = func(any) bool { return true }
	register(t, reg, d)

	first, err := reg.Schemas(nil)
	if err != nil {
		t.Fatal(err)
	}
	first[0].Parameters.(*jsonv.Object).Set("mutated", true)
	first[0].Description = "mutated"
	params.(*jsonv.Object).Set("late", true) // the caller's own object after registration
	second, err := reg.Schemas(nil)
	if err != nil {
		t.Fatal(err)
	}
	names, err := reg.SchemaNames(nil)
	if err != nil || len(names) != len(second) || names[0] != second[0].Name {
		t.Errorf("SchemaNames = %v, %v; want the names of %+v", names, err, second)
	}
	b, _ := jsonv.Marshal(second[0].Parameters)
	if second[0].Name != "echo" || second[0].Description != "echo arguments back" ||
		string(b) != `{"type":"object","properties":{"text":{"type":"string"}}}` {
		t.Errorf("schemas = %+v %s", second[0], b)
	}

	lossy := strTool("lossy", "")
	lossy.Parameters = map[string]any{"type": "object", "default": func() {}}
	register(t, reg, lossy)
	if _, err := reg.Schemas(nil); err == nil || err.Error() != `tool "lossy" parameters must be lossless JSON before schema projection` {
		t.Errorf("lossy schemas error = %v", err)
	}
	if _, err := reg.SchemaNames(nil); err == nil || err.Error() != `tool "lossy" parameters must be lossless JSON before schema projection` {
		t.Errorf("lossy schema names error = %v", err)
	}
	// Go values that snapshot losslessly are accepted and projected as jsonv.
	goParams := strTool("goparams", "")
	goParams.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
	reg2 := newReg(t)
	register(t, reg2, goParams)
	s, err := reg2.Schemas(nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := jsonv.Marshal(s[0].Parameters); string(b) != `{"properties":{},"type":"object"}` {
		t.Errorf("Go parameters = %s", b)
	}
}

func TestSchemasDeep(t *testing.T) {
	const depth = 5000
	var nested any = js(t, `{"type":"string"}`)
	for range depth {
		nested = jsonv.NewObject(jsonv.Member{Name: "oneOf", Value: []any{nested, js(t, `{"type":"null"}`)}})
	}
	d := strTool("deep", "")
	d.Parameters = jsonv.NewObject(jsonv.Member{Name: "type", Value: "object"},
		jsonv.Member{Name: "properties", Value: jsonv.NewObject(jsonv.Member{Name: "nested", Value: nested})})
	reg := newReg(t)
	register(t, reg, d)
	s, err := reg.Schemas(nil)
	if err != nil {
		t.Fatal(err)
	}
	props, _ := s[0].Parameters.(*jsonv.Object).Get("properties")
	cur, _ := props.(*jsonv.Object).Get("nested")
	layers := 0
	for {
		o := cur.(*jsonv.Object)
		one, ok := o.Get("oneOf")
		if !ok {
			break
		}
		cur = one.([]any)[0]
		layers++
	}
	if layers != depth {
		t.Errorf("layers = %d", layers)
	}
}

// TestRestrictErrors pins docs/behaviour.md §3.5: check order and exact messages.
func TestRestrictErrors(t *testing.T) {
	reg := newReg(t)
	register(t, reg, strTool("real", ""))
	register(t, reg, strTool("also", ""))
	a := reg.NewScope("a", nil)
	register(t, a, strTool("local", ""))
	const (
		unscoped = "tools.restrict() requires a scoped context (agent.ctx): a context-global restriction would mask every agent — deny the tool for the intended agent instead"
		noop     = "tools.restrict({}) is a no-op: pass `allow` and/or `deny` (an empty filter is almost always a materialized-empty-config bug)"
		reserved = `tools.restrict() cannot name reserved Code Mode presentation transport "run_code"; restrict end-capability tools instead`
	)
	tests := []struct {
		name  string
		scope *tool.Scope
		f     tool.Filter
		want  string
	}{
		{"unscoped", reg.Global(), tool.Filter{Deny: []string{"real"}}, unscoped},
		{"unscoped before empty", reg.Global(), tool.Filter{}, unscoped},
		{"empty", a, tool.Filter{}, noop},
		{"empty before run_code", a, tool.Filter{}, noop},
		{"run_code in allow", a, tool.Filter{Allow: []string{"run_code"}}, reserved},
		{"run_code in deny", a, tool.Filter{Deny: []string{"ghost", "run_code"}}, reserved},
		{"own name is unknown", a, tool.Filter{Allow: []string{"local"}},
			`tools.restrict() names unknown global tool "local"; known global tools: also, real`},
		{"typo", a, tool.Filter{Allow: []string{"reall"}},
			`tools.restrict() names unknown global tool "reall"; known global tools: also, real`},
		{"plural", a, tool.Filter{Deny: []string{"ghost", "wraith"}},
			`tools.restrict() names unknown global tools "ghost", "wraith"; known global tools: also, real`},
		{"allow then deny order", a, tool.Filter{Allow: []string{"real", "x"}, Deny: []string{"y"}},
			`tools.restrict() names unknown global tools "x", "y"; known global tools: also, real`},
		// The reference lists every unknown occurrence, duplicates included.
		{"duplicates", a, tool.Filter{Allow: []string{"ghost"}, Deny: []string{"ghost"}},
			`tools.restrict() names unknown global tools "ghost", "ghost"; known global tools: also, real`},
		{"empty allow list is given", a, tool.Filter{Allow: []string{}, Deny: []string{"nope"}},
			`tools.restrict() names unknown global tool "nope"; known global tools: also, real`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.scope.Restrict(tt.f)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v\nwant %q", err, tt.want)
			}
		})
	}
	empty := newReg(t)
	_, err := empty.NewScope("e", nil).Restrict(tool.Filter{Deny: []string{"ghost"}})
	if want := `tools.restrict() names unknown global tool "ghost"; known global tools: (none)`; err == nil || err.Error() != want {
		t.Errorf("empty registry: %v", err)
	}
	// A failed restriction leaves no layer behind.
	if n := empty.LayerCount(); n != 0 {
		t.Errorf("layers after a failed restriction = %d", n)
	}
}

func TestRestrictSemantics(t *testing.T) {
	t.Run("allow masks globals, own tools exempt", func(t *testing.T) {
		reg := newReg(t)
		a := reg.NewScope("a", nil)
		register(t, reg, strTool("read", "ran:read"))
		register(t, reg, strTool("bash", "ran:bash"))
		register(t, a, strTool("capture", "ran:capture"))
		if _, err := a.Restrict(tool.Filter{Allow: []string{"read"}}); err != nil {
			t.Fatal(err)
		}
		if got := reg.Names(a); !slices.Equal(got, []string{"read", "capture"}) {
			t.Errorf("Names(a) = %v", got)
		}
		for name, want := range map[string]string{"bash": `Error: unknown tool "bash"`, "read": "ran:read", "capture": "ran:capture"} {
			if got := run(reg, name, a); got != want {
				t.Errorf("run %s = %q", name, got)
			}
		}
		if reg.Get("bash", a) != nil {
			t.Error("Get sees a restricted tool")
		}
		if got := reg.Names(nil); !slices.Equal(got, []string{"read", "bash"}) {
			t.Errorf("global view changed: %v", got)
		}
		// Restricted names stay known (prompt ordering validates against them).
		if got := reg.KnownNames(a); !slices.Equal(got, []string{"read", "bash", "capture"}) {
			t.Errorf("KnownNames(a) = %v", got)
		}
	})
	t.Run("deny admits later globals, allow excludes them", func(t *testing.T) {
		reg := newReg(t)
		denied := reg.NewScope("denied", nil)
		allowed := reg.NewScope("allowed", nil)
		register(t, reg, strTool("read", ""))
		register(t, reg, strTool("bash", ""))
		if _, err := denied.Restrict(tool.Filter{Deny: []string{"bash"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := allowed.Restrict(tool.Filter{Allow: []string{"read"}}); err != nil {
			t.Fatal(err)
		}
		register(t, reg, strTool("web", "ran:web"))
		register(t, denied, strTool("denied-local", "ran:denied-local"))
		register(t, allowed, strTool("allowed-local", "ran:allowed-local"))
		if got := reg.Names(denied); !slices.Equal(got, []string{"read", "web", "denied-local"}) {
			t.Errorf("Names(denied) = %v", got)
		}
		if got := reg.Names(allowed); !slices.Equal(got, []string{"read", "allowed-local"}) {
			t.Errorf("Names(allowed) = %v", got)
		}
		if got := run(reg, "web", denied); got != "ran:web" {
			t.Errorf("web in denied = %q", got)
		}
		if got := run(reg, "web", allowed); got != `Error: unknown tool "web"` {
			t.Errorf("web in allowed = %q", got)
		}
	})
	t.Run("intersection and independent lifting", func(t *testing.T) {
		reg := newReg(t)
		a := reg.NewScope("a", nil)
		for _, n := range []string{"a", "b", "c"} {
			register(t, reg, strTool(n, ""))
		}
		liftAllow, err := a.Restrict(tool.Filter{Allow: []string{"a", "b"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Restrict(tool.Filter{Deny: []string{"b"}}); err != nil {
			t.Fatal(err)
		}
		if got := reg.Names(a); !slices.Equal(got, []string{"a"}) {
			t.Errorf("Names = %v", got)
		}
		liftAllow()
		liftAllow() // exact and idempotent
		if got := reg.Names(a); !slices.Equal(got, []string{"a", "c"}) {
			t.Errorf("after lifting the allow: %v", got)
		}
	})
	t.Run("compiled at call time", func(t *testing.T) {
		reg := newReg(t)
		a := reg.NewScope("a", nil)
		register(t, reg, strTool("a", ""))
		register(t, reg, strTool("b", ""))
		deny := []string{"a", "b"}
		if _, err := a.Restrict(tool.Filter{Deny: deny[:1]}); err != nil {
			t.Fatal(err)
		}
		deny[0] = "b"
		if got := reg.Names(a); !slices.Equal(got, []string{"b"}) {
			t.Errorf("Names = %v", got)
		}
	})
	t.Run("empty allow admits nothing", func(t *testing.T) {
		reg := newReg(t)
		a := reg.NewScope("a", nil)
		register(t, reg, strTool("a", ""))
		register(t, a, strTool("own", ""))
		if _, err := a.Restrict(tool.Filter{Allow: []string{}}); err != nil {
			t.Fatal(err)
		}
		if got := reg.Names(a); !slices.Equal(got, []string{"own"}) {
			t.Errorf("Names = %v", got)
		}
	})
	t.Run("ancestor tools are restrictable by a child", func(t *testing.T) {
		reg := newReg(t)
		parent := reg.NewScope("parent", nil)
		register(t, parent, strTool("bash", ""))
		register(t, parent, strTool("read", ""))
		child := reg.NewScope("child", parent)
		register(t, child, strTool("report", "ran:report"))
		if _, err := child.Restrict(tool.Filter{Deny: []string{"bash"}}); err != nil {
			t.Fatal(err)
		}
		if got := reg.Names(child); !slices.Equal(got, []string{"read", "report"}) {
			t.Errorf("Names(child) = %v", got)
		}
		if got := run(reg, "bash", child); got != `Error: unknown tool "bash"` {
			t.Errorf("bash in child = %q", got)
		}
		if got := reg.Names(parent); !slices.Equal(got, []string{"bash", "read"}) {
			t.Errorf("the parent's view changed: %v", got)
		}
		// The parent's own tools are not restrictable by the parent itself.
		if _, err := parent.Restrict(tool.Filter{Deny: []string{"bash"}}); err == nil {
			t.Error("a scope restricted its own tool")
		}
	})
	t.Run("an ancestor restriction reaches every descendant", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, strTool("web", ""))
		parent := reg.NewScope("parent", nil)
		register(t, parent, strTool("bash", ""))
		child := reg.NewScope("child", parent)
		grandchild := reg.NewScope("grandchild", child)
		if _, err := parent.Restrict(tool.Filter{Deny: []string{"web"}}); err != nil {
			t.Fatal(err)
		}
		for _, s := range []*tool.Scope{parent, child, grandchild} {
			if got := reg.Names(s); !slices.Equal(got, []string{"bash"}) {
				t.Errorf("Names(%s) = %v", s.Name(), got)
			}
		}
		// Restrictions along the chain intersect.
		register(t, reg, strTool("read", ""))
		if _, err := child.Restrict(tool.Filter{Allow: []string{"read", "web"}}); err != nil {
			t.Fatal(err)
		}
		if got := reg.Names(grandchild); !slices.Equal(got, []string{"read"}) {
			t.Errorf("Names(grandchild) = %v", got)
		}
	})
}

// TestGuards pins docs/behaviour.md §3.6.
func TestGuards(t *testing.T) {
	t.Run("global then chain farthest first, first reason wins", func(t *testing.T) {
		reg := newReg(t)
		root := reg.NewScope("root", nil)
		leaf := reg.NewScope("leaf", root)
		register(t, reg, strTool("t", "ran:t"))
		var order []string
		guard := func(name, reason string) tool.GuardFunc {
			return func(*tool.Execution) string { order = append(order, name); return reason }
		}
		leaf.Guard(guard("leaf", "leaf denial"))
		root.Guard(guard("root", ""))
		reg.Guard(guard("global", ""))
		if got := run(reg, "t", leaf); got != "Error: leaf denial" {
			t.Errorf("run = %q", got)
		}
		if !slices.Equal(order, []string{"global", "root", "leaf"}) {
			t.Errorf("order = %v", order)
		}
		order = nil
		if got := run(reg, "t", nil); got != "ran:t" || !slices.Equal(order, []string{"global"}) {
			t.Errorf("no-agent run = %q, order %v", got, order)
		}
	})
	t.Run("a force-allowing hook loses to a guard", func(t *testing.T) {
		reg := newReg(t)
		a := reg.NewScope("a", nil)
		other := reg.NewScope("other", nil)
		var calls counter
		d := strTool("t", "ran:t")
		d.Execute = func(context.Context, *tool.Call) (any, error) { calls.inc("body"); return "ran:t", nil }
		register(t, reg, d)
		guard := func(exec *tool.Execution) string {
			if args, ok := exec.Args(); !ok || args == nil {
				t.Error("guard did not see the arguments")
			}
			return "terminal policy"
		}
		liftFirst := a.Guard(guard)
		a.Guard(guard)
		a.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
			return tool.Allow(), nil
		}, tool.Prepend())
		if got := run(reg, "t", a); got != "Error: terminal policy" {
			t.Errorf("run = %q", got)
		}
		if got := run(reg, "t", other); got != "ran:t" {
			t.Errorf("other = %q", got)
		}
		liftFirst()
		if got := run(reg, "t", a); got != "Error: terminal policy" {
			t.Errorf("after lifting one duplicate: %q", got)
		}
		a.Close()
		if got := run(reg, "t", a); got != "ran:t" {
			t.Errorf("after Close: %q", got)
		}
		if calls.get("body") != 2 {
			t.Errorf("body calls = %d", calls.get("body"))
		}
	})
	t.Run("abstaining guard then denying guard", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, strTool("t", "ran:t"))
		reg.Guard(func(*tool.Execution) string { return "" })
		reg.Guard(func(*tool.Execution) string { return "global denial" })
		if got := run(reg, "t", nil); got != "Error: global denial" {
			t.Errorf("run = %q", got)
		}
	})
	t.Run("a guard registered by a guard runs from the next call", func(t *testing.T) {
		// docs/behaviour.md §3.6 recommends snapshotting the guard list; the reference's live iteration is
		// non-normative.
		reg := newReg(t)
		register(t, reg, strTool("t", "ran:t"))
		added := false
		reg.Guard(func(*tool.Execution) string {
			if !added {
				added = true
				reg.Guard(func(*tool.Execution) string { return "late denial" })
			}
			return ""
		})
		if got := run(reg, "t", nil); got != "ran:t" {
			t.Errorf("first = %q", got)
		}
		if got := run(reg, "t", nil); got != "Error: late denial" {
			t.Errorf("second = %q", got)
		}
	})
	t.Run("a guard that replaces itself takes effect from the next call", func(t *testing.T) {
		reg := newReg(t)
		a := reg.NewScope("a", nil)
		register(t, reg, strTool("t", "ran:t"))
		register(t, a, strTool("scope_sibling", ""))
		var calls []string
		var lift func()
		lift = a.Guard(func(*tool.Execution) string {
			calls = append(calls, "first")
			lift()
			a.Guard(func(*tool.Execution) string {
				calls = append(calls, "replacement")
				return "replacement denial"
			})
			return ""
		})
		if got := run(reg, "t", a); got != "ran:t" || !slices.Equal(calls, []string{"first"}) {
			t.Errorf("first call = %q, guards %v", got, calls)
		}
		if got := run(reg, "t", a); got != "Error: replacement denial" || !slices.Equal(calls, []string{"first", "replacement"}) {
			t.Errorf("second call = %q, guards %v", got, calls)
		}
	})
	t.Run("guards do not emit changes", func(t *testing.T) {
		reg := newReg(t)
		var changes []tool.Change
		reg.OnChange(func(c tool.Change) error { changes = append(changes, c); return nil })
		undo := reg.Guard(func(*tool.Execution) string { return "" })
		undo()
		reg.NewScope("a", nil).Guard(func(*tool.Execution) string { return "" })()
		if len(changes) != 0 {
			t.Errorf("changes = %+v", changes)
		}
	})
}

// TestPresentation pins docs/behaviour.md §3.7 and §3.8.
func TestPresentation(t *testing.T) {
	t.Run("errors", func(t *testing.T) {
		reg := newReg(t)
		_, err := reg.Global().PresentAs(tool.ModeCode)
		if want := "tools.presentAs() requires a scoped context (agent.ctx): a context-global presentation is the `mode` config field on the tools row"; err == nil || err.Error() != want {
			t.Errorf("unscoped: %v", err)
		}
		a := reg.NewScope("a", nil)
		if _, err := a.PresentAs(tool.ModeCode); err != nil {
			t.Fatal(err)
		}
		_, err = a.PresentAs(tool.ModeBoth)
		if want := `tools.presentAs("both") conflicts with "code" already declared for this scope; one composition selects one presentation`; err == nil || err.Error() != want {
			t.Errorf("second declaration: %v", err)
		}
		if _, err := reg.NewScope("b", nil).PresentAs("weird"); err == nil {
			t.Error("an invalid mode was accepted")
		}
	})
	t.Run("nearest declaration wins, siblings and the default untouched", func(t *testing.T) {
		reg := newReg(t)
		register(t, reg, strTool("echo", "ran:echo"))
		standing := reg.NewScope("preset", nil)
		joined := reg.NewScope("joined", standing)
		optOut := reg.NewScope("opt-out", standing)
		loner := reg.NewScope("loner", nil)
		restore, err := standing.PresentAs(tool.ModeCode)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := optOut.PresentAs(tool.ModeNative); err != nil {
			t.Fatal(err)
		}
		want := map[*tool.Scope]tool.Mode{nil: tool.ModeNative, standing: tool.ModeCode, joined: tool.ModeCode, optOut: tool.ModeNative, loner: tool.ModeNative}
		for s, m := range want {
			if got := reg.ModeFor(s); got != m {
				t.Errorf("ModeFor(%s) = %s, want %s", s.Name(), got, m)
			}
		}
		if reg.Get("run_code", joined) == nil || reg.Get("run_code", loner) != nil || reg.Get("run_code", nil) != nil || reg.Get("run_code", optOut) != nil {
			t.Error("run_code visibility does not follow the effective mode")
		}
		if got := reg.Names(joined); !slices.Equal(got, []string{"echo", "run_code"}) {
			t.Errorf("Names(joined) = %v", got)
		}
		// Get ignores the collapse; execution does not.
		if reg.Get("echo", joined) == nil {
			t.Error("Get applies the collapse")
		}
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "echo", Args: &jsonv.Object{}, Agent: joined})
		wantJSON(t, res, "{\"isError\":true,\"error\":{\"message\":\"unknown tool \\\"echo\\\": only `run_code` is callable directly — call `echo` from inside a `run_code` program instead\",\"info\":{\"name\":\"ToolNotFoundError\",\"code\":\"UNKNOWN_TOOL\"}},\"content\":[{\"type\":\"text\",\"text\":\"Error: unknown tool \\\"echo\\\": only `run_code` is callable directly — call `echo` from inside a `run_code` program instead\"}]}")
		if reg.ExecutionMode(tool.Input{Name: "echo", Args: &jsonv.Object{}, Agent: joined}) != tool.Exclusive {
			t.Error("a collapsed call is not exclusive")
		}
		if got := run(reg, "echo", loner); got != "ran:echo" {
			t.Errorf("sibling = %q", got)
		}
		if got := run(reg, "echo", optOut); got != "ran:echo" {
			t.Errorf("opt-out = %q", got)
		}
		restore()
		if reg.ModeFor(joined) != tool.ModeNative || reg.Get("run_code", joined) != nil {
			t.Error("restore did not bring back the default")
		}
		if got := run(reg, "echo", joined); got != "ran:echo" {
			t.Errorf("after restore = %q", got)
		}
	})
	t.Run("both mode collapses nothing", func(t *testing.T) {
		reg := newReg(t, tool.Config{Mode: tool.ModeBoth})
		register(t, reg, strTool("echo", "ran:echo"))
		if got := run(reg, "echo", nil); got != "ran:echo" {
			t.Errorf("run = %q", got)
		}
		if got := reg.Names(nil); !slices.Equal(got, []string{"echo", "run_code"}) {
			t.Errorf("Names = %v", got)
		}
	})
	t.Run("code deployment, nested calls pass", func(t *testing.T) {
		reg := newReg(t, tool.Config{Mode: tool.ModeCode})
		register(t, reg, strTool("echo", "ran:echo"))
		if got := run(reg, "echo", nil); !strings.HasPrefix(got, `Error: unknown tool "echo": only`) {
			t.Errorf("direct = %q", got)
		}
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "echo", Args: &jsonv.Object{}, Parent: &tool.Token{}})
		if firstText(res) != "ran:echo" {
			t.Errorf("nested = %q", firstText(res))
		}
		if reg.ExecutionMode(tool.Input{Name: "run_code", Args: &jsonv.Object{}}) != tool.Exclusive {
			t.Error("run_code classified parallel")
		}
	})
	t.Run("the transport is shared and never stored", func(t *testing.T) {
		reg := newReg(t)
		a, b := reg.NewScope("a", nil), reg.NewScope("b", nil)
		if _, err := a.PresentAs(tool.ModeCode); err != nil {
			t.Fatal(err)
		}
		if _, err := b.PresentAs(tool.ModeBoth); err != nil {
			t.Fatal(err)
		}
		if ra, rb := reg.Get("run_code", a), reg.Get("run_code", b); ra == nil || ra != rb {
			t.Error("run_code is not one shared definition")
		}
		// Restricting cannot remove it; restricting cannot name it.
		register(t, reg, strTool("x", ""))
		if _, err := a.Restrict(tool.Filter{Allow: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
		if got := reg.Names(a); !slices.Equal(got, []string{"x", "run_code"}) {
			t.Errorf("Names = %v", got)
		}
		s, err := reg.Schemas(a)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != 2 || s[1].Name != "run_code" {
			t.Errorf("schemas = %+v", s)
		}
		if !slices.Equal(reg.KnownNames(a), []string{"x"}) {
			t.Errorf("KnownNames includes the transport: %v", reg.KnownNames(a))
		}
		// A native agent cannot dispatch run_code even though another agent presents it.
		c := reg.NewScope("c", nil)
		if got := run(reg, "run_code", c); got != `Error: unknown tool "run_code"` {
			t.Errorf("native run_code = %q", got)
		}
	})
}

// TestChanges pins docs/behaviour.md §3.9 and the rollback rule of §2.2.
func TestChanges(t *testing.T) {
	reg := newReg(t)
	var got []string
	reg.OnChange(func(c tool.Change) error {
		got = append(got, string(c.Kind)+":"+c.Name+"@"+c.Scope.Name())
		return nil
	})
	register(t, reg, strTool("g", ""))
	a := reg.NewScope("a", nil)
	undo := register(t, a, strTool("s", ""))
	lift, err := a.Restrict(tool.Filter{Deny: []string{"g"}})
	if err != nil {
		t.Fatal(err)
	}
	restore, err := a.PresentAs(tool.ModeCode)
	if err != nil {
		t.Fatal(err)
	}
	a.Guard(func(*tool.Execution) string { return "" })
	undo()
	undo()
	lift()
	restore()
	want := []string{"registered:g@global", "registered:s@a", "restricted:@a", "mode:@a", "unregistered:s@a", "unrestricted:@a", "mode:@a"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

func TestChangeListenerRollsBack(t *testing.T) {
	for _, panics := range []bool{false, true} {
		reg := newReg(t)
		threw := false
		remove := reg.OnChange(func(tool.Change) error {
			if threw {
				return nil
			}
			threw = true
			if panics {
				panic("boom change listener")
			}
			return errors.New("boom change listener")
		})
		_, err := reg.Register(strTool("echo", ""))
		if err == nil || !contains(err.Error(), "boom change listener") {
			t.Fatalf("panics=%v: error = %v", panics, err)
		}
		if reg.Get("echo", nil) != nil || len(reg.Names(nil)) != 0 {
			t.Fatal("the registration leaked")
		}
		undo := register(t, reg, strTool("echo", ""))
		if got := reg.Names(nil); !slices.Equal(got, []string{"echo"}) {
			t.Errorf("Names = %v", got)
		}
		undo()
		remove()
		if reg.Get("echo", nil) != nil {
			t.Error("undo did not unregister")
		}
		// A scoped registration rolls back too and leaves no layer.
		threw = false
		reg.OnChange(func(tool.Change) error {
			if threw {
				return nil
			}
			threw = true
			return errors.New("no")
		})
		if _, err := reg.NewScope("a", nil).Register(strTool("x", "")); err == nil {
			t.Fatal("scoped registration survived a failing listener")
		}
		if reg.LayerCount() != 0 {
			t.Errorf("layers = %d", reg.LayerCount())
		}
	}
}

// TestDisposers checks exact, independent, idempotent disposers; Scope.Close unwinding every
// contribution; and layer reclamation (docs/behaviour.md §3.2).
func TestDisposers(t *testing.T) {
	reg := newReg(t)
	register(t, reg, strTool("g", "ran:g"))
	a := reg.NewScope("a", nil)
	u1 := register(t, a, strTool("one", ""))
	register(t, a, strTool("two", ""))
	if reg.LayerCount() != 1 {
		t.Fatalf("layers = %d", reg.LayerCount())
	}
	u1()
	u1()
	if got := reg.Names(a); !slices.Equal(got, []string{"g", "two"}) {
		t.Errorf("Names = %v", got)
	}
	if _, err := a.Restrict(tool.Filter{Deny: []string{"g"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PresentAs(tool.ModeBoth); err != nil {
		t.Fatal(err)
	}
	a.Guard(func(*tool.Execution) string { return "guarded" })
	var seen counter
	a.OnPreExecute(func(_ context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		seen.inc("pre")
		return next()
	})
	a.OnResult(func(context.Context, *tool.Execution, *tool.Result) error { seen.inc("result"); return nil })
	run(reg, "two", a)
	a.Close()
	a.Close()
	if reg.LayerCount() != 0 {
		t.Errorf("layers after Close = %d", reg.LayerCount())
	}
	if reg.ModeFor(a) != tool.ModeNative {
		t.Error("mode survived Close")
	}
	if got := run(reg, "g", a); got != "ran:g" {
		t.Errorf("after Close: %q", got)
	}
	if seen.get("pre") != 1 || seen.get("result") != 1 {
		t.Errorf("hooks survived Close: %v", seen.m)
	}
	// A closed scope refuses new contributions, without announcing them.
	var changes []tool.Change
	stop := reg.OnChange(func(c tool.Change) error { changes = append(changes, c); return nil })
	if _, err := a.Register(strTool("late", "")); err == nil || err.Error() != `scope "a" is closed` {
		t.Errorf("a closed scope accepted a tool: %v", err)
	}
	if _, err := a.Restrict(tool.Filter{Deny: []string{"g"}}); err == nil {
		t.Error("a closed scope accepted a restriction")
	}
	if _, err := a.PresentAs(tool.ModeCode); err == nil {
		t.Error("a closed scope accepted a mode")
	}
	if len(changes) != 0 {
		t.Errorf("a closed scope announced changes: %+v", changes)
	}
	stop()
	if got := reg.Names(a); !slices.Equal(got, []string{"g"}) {
		t.Errorf("a closed scope holds %v", got)
	}
	a.Guard(func(*tool.Execution) string { return "late" })()
	a.OnPreExecute(func(context.Context, *tool.Execution, func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		return tool.Deny("late"), nil
	})()
	if got := run(reg, "g", a); got != "ran:g" {
		t.Errorf("late contributions to a closed scope took effect: %q", got)
	}
	if reg.LayerCount() != 0 {
		t.Errorf("layers = %d", reg.LayerCount())
	}
	// A layer with only a guard is reclaimed when the guard goes.
	b := reg.NewScope("b", nil)
	undo := b.Guard(func(*tool.Execution) string { return "" })
	if reg.LayerCount() != 1 {
		t.Errorf("guard layer not created")
	}
	undo()
	if reg.LayerCount() != 0 {
		t.Errorf("guard layer not reclaimed")
	}
	// Closing the global scope clears the global contributions but keeps it usable.
	reg.Global().Close()
	if len(reg.Names(nil)) != 0 {
		t.Errorf("global tools survived Close: %v", reg.Names(nil))
	}
	register(t, reg, strTool("again", ""))
}

// TestScopeFilteredHooks pins docs/behaviour.md §3.12.
func TestScopeFilteredHooks(t *testing.T) {
	reg := newReg(t)
	register(t, reg, strTool("t", "ran:t"))
	parent := reg.NewScope("parent", nil)
	child := reg.NewScope("child", parent)
	other := reg.NewScope("other", nil)
	var seen []string
	note := func(who string) func(exec *tool.Execution) {
		return func(exec *tool.Execution) {
			agent := "-"
			if exec.Agent() != nil {
				agent = exec.Agent().Name()
			}
			seen = append(seen, who+"@"+agent)
		}
	}
	for _, s := range []*tool.Scope{reg.Global(), parent, child} {
		n := note(s.Name())
		s.OnPreExecute(func(_ context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
			n(exec)
			return next()
		})
		s.WrapExecute(func(ctx context.Context, exec *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			n(exec)
			return next(ctx)
		})
		s.OnPostExecute(func(_ context.Context, exec *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			n(exec)
			return next()
		})
		s.OnResult(func(_ context.Context, exec *tool.Execution, _ *tool.Result) error { n(exec); return nil })
	}
	cases := []struct {
		agent *tool.Scope
		want  []string
	}{
		{nil, []string{"global@-"}},
		{other, []string{"global@other"}},
		{parent, []string{"global@parent", "parent@parent"}},
		{child, []string{"global@child", "parent@child", "child@child"}},
	}
	for _, c := range cases {
		seen = nil
		if got := run(reg, "t", c.agent); got != "ran:t" {
			t.Fatalf("run = %q", got)
		}
		var want []string
		for range 4 { // pre, execute, post, result: each stage sees the same listeners in order
			want = append(want, c.want...)
		}
		if diff := cmp.Diff(want, seen); diff != "" {
			t.Errorf("agent %s (-want +got):\n%s", c.agent.Name(), diff)
		}
	}
}

func TestHookPrependOrder(t *testing.T) {
	reg := newReg(t)
	register(t, reg, strTool("t", ""))
	var order []string
	add := func(name string, opts ...tool.HookOption) {
		reg.OnPreExecute(func(_ context.Context, _ *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
			order = append(order, name)
			return next()
		}, opts...)
	}
	add("first")
	add("second")
	add("prepended", tool.Prepend())
	run(reg, "t", nil)
	if !slices.Equal(order, []string{"prepended", "first", "second"}) {
		t.Errorf("order = %v", order)
	}
}

func TestDefinitionsAndNamesFollowView(t *testing.T) {
	reg := newReg(t, tool.Config{Mode: tool.ModeBoth})
	register(t, reg, strTool("a", ""))
	register(t, reg, strTool("b", ""))
	defs := reg.Definitions(nil)
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	if !slices.Equal(names, reg.Names(nil)) || !slices.Equal(names, []string{"a", "b", "run_code"}) {
		t.Errorf("Definitions %v vs Names %v", names, reg.Names(nil))
	}
}

func TestScopeAccessors(t *testing.T) {
	reg := newReg(t)
	p := reg.NewScope("p", nil)
	c := reg.NewScope("c", p)
	top := reg.NewScope("top", reg.Global())
	if c.Parent() != p || p.Parent() != nil || top.Parent() != nil || c.Registry() != reg || c.Name() != "c" {
		t.Error("scope accessors")
	}
	if !reg.Global().IsGlobal() || p.IsGlobal() {
		t.Error("IsGlobal")
	}
	defer func() {
		if recover() == nil {
			t.Error("a parent from another registry was accepted")
		}
	}()
	newReg(t).NewScope("x", p)
}

// TestDeferContextDefaults checks the fields DeferContext fills in.
func TestDeferContextDefaults(t *testing.T) {
	reg := newReg(t)
	register(t, reg, bodyTool("t", func(_ context.Context, call *tool.Call) (any, error) {
		call.DeferContext(content.Message{Role: content.RoleAssistant, Content: content.Texts("x")})
		return "ok", nil
	}))
	res := reg.Execute(context.Background(), tool.Input{CallID: "call-7", Name: "t", Args: &jsonv.Object{}})
	if len(res.AdditionalContexts) != 1 {
		t.Fatalf("contexts = %+v", res.AdditionalContexts)
	}
	m := res.AdditionalContexts[0]
	if m.ID == "" || m.Role != content.RoleUser || m.Source == nil || *m.Source != (content.Source{Kind: "tool", CallID: "call-7"}) {
		t.Errorf("context = %+v", m)
	}
}
