package tool_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// jsonValue generates jsonv values nested at most depth levels.
func jsonValue(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		maxKind := 5
		if depth <= 0 {
			maxKind = 3
		}
		switch rapid.IntRange(0, maxKind).Draw(t, "kind") {
		case 0:
			return nil
		case 1:
			return rapid.Bool().Draw(t, "bool")
		case 2:
			f := rapid.Float64().Draw(t, "number")
			if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
				f = 0
			}
			return f
		case 3:
			return rapid.String().Draw(t, "string")
		case 4:
			n := rapid.IntRange(0, 4).Draw(t, "len")
			arr := make([]any, n)
			for i := range arr {
				arr[i] = jsonValue(depth-1).Draw(t, "elem")
			}
			return arr
		default:
			names := rapid.SliceOfNDistinct(rapid.String(), 0, 4, rapid.ID[string]).Draw(t, "names")
			o := &jsonv.Object{}
			for _, n := range names {
				o.Set(n, jsonValue(depth-1).Draw(t, "member"))
			}
			return o
		}
	})
}

// TestPropertyJSONRoundTrip: any lossless value survives encoding and ParseArguments with its
// member order, and snapshotting it changes nothing.
func TestPropertyJSONRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := jsonValue(4).Draw(t, "value")
		b, err := jsonv.Marshal(v)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		back := tool.ParseArguments(string(b))
		if s, ok := back.(string); ok && s == string(b) {
			t.Fatalf("%s did not parse", b)
		}
		if !jsonv.Equal(v, back) {
			t.Fatalf("round trip changed the value: %s", b)
		}
		b2, _ := jsonv.Marshal(back)
		if string(b) != string(b2) {
			t.Fatalf("round trip changed the encoding: %s vs %s", b, b2)
		}
		// Through the pipeline: the body sees exactly the arguments, and the value it
		// returns comes back unchanged.
		reg := newReg(t)
		register(t, reg, bodyTool("id", func(_ context.Context, call *tool.Call) (any, error) { return call.Args(), nil }))
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "id", Args: back})
		if res.IsError || !jsonv.Equal(res.Value, v) {
			t.Fatalf("identity tool: %s", resultJSON(t, res))
		}
		out, err := jsonv.ParseString(resultJSON(t, res))
		if err != nil {
			t.Fatalf("result JSON: %v", err)
		}
		value, _ := out.(*jsonv.Object).Get("value")
		if !jsonv.Equal(value, v) {
			t.Fatal("the result's wire value differs")
		}
		blocks, _ := out.(*jsonv.Object).Get("content")
		list, err := content.ListFromValue(blocks)
		if err != nil || len(list) != len(res.Content) || list[0].Text != res.Content[0].Text {
			t.Fatalf("content does not round-trip: %v", err)
		}
	})
}

// scenario is one randomly configured call through the pipeline.
type scenario struct {
	Pre       int // 0 allow, 1 deny, 2 ask (approved), 3 ask (rejected), 4 error, 5 panic, 6 cancel then allow
	Guard     int // 0 none, 1 deny, 2 panic
	Wrapper   int // 0 none, 1 pass, 2 short success, 3 short failure, 4 error, 5 short invalid value
	Body      int // 0 success, 1 error, 2 panic, 3 invalid value, 4 cancel then success, 5 coded error
	Conclude  bool
	Defer     bool
	Post      int // 0 none, 1 accept+ctx, 2 replace content, 3 replace value, 4 invalid value, 5 block, 6 error, 7 both, 8 cancel then accept
	Finalizer int // 0 none, 1 nil, 2 replace, 3 error
	PreAbort  bool
	Name      string
	LossyArgs bool
	Mutate    bool // every stage mutates whatever it was given
}

// choice draws 0 (the uneventful option) half of the time and 1..n otherwise, so that most
// scenarios get far enough to exercise the later stages.
func choice(t *rapid.T, label string, n int) int {
	if rapid.Bool().Draw(t, label+"-plain") {
		return 0
	}
	return rapid.IntRange(1, n).Draw(t, label)
}

func drawScenario(t *rapid.T) scenario {
	return scenario{
		Pre:       choice(t, "pre", 6),
		Guard:     choice(t, "guard", 2),
		Wrapper:   choice(t, "wrapper", 5),
		Body:      choice(t, "body", 5),
		Conclude:  rapid.Bool().Draw(t, "conclude"),
		Defer:     rapid.Bool().Draw(t, "defer"),
		Post:      choice(t, "post", 8),
		Finalizer: choice(t, "finalizer", 3),
		PreAbort:  rapid.IntRange(0, 9).Draw(t, "preAbort") == 0,
		Name:      rapid.SampledFrom([]string{"t", "t", "t", "missing"}).Draw(t, "name"),
		LossyArgs: rapid.IntRange(0, 9).Draw(t, "lossy") == 0,
	}
}

// outcome is what one scenario run observed.
type outcome struct {
	res                                          *tool.Result
	bodies, posts, results, finalizes, concluded int
	observed                                     string
}

func runScenario(tb TB, sc scenario) outcome {
	var o outcome
	reg := newReg(tb)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	callerArgs := jsonv.NewObject(jsonv.Member{Name: "text", Value: "hello"}, jsonv.Member{Name: "list", Value: []any{1.0, "x"}})
	def := &tool.Definition{
		Name:       "t",
		Parameters: &jsonv.Object{},
		Output: tool.Output{
			Schema: js(nil, `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
			Render: func(args, value any) ([]content.Block, error) {
				s, _ := value.(*jsonv.Object).Get("text")
				if sc.Mutate {
					value.(*jsonv.Object).Set("text", "render mutation")
					args.(*jsonv.Object).Set("text", "render mutation")
				}
				return content.Texts(s.(string)), nil
			},
			PresentationMeta: func(args, value any) (any, error) {
				return map[string]any{"seen": jsonv.Clone(value), "args": jsonv.Clone(args)}, nil
			},
		},
		Execute: func(_ context.Context, call *tool.Call) (any, error) {
			o.bodies++
			args := call.Args().(*jsonv.Object)
			text, _ := args.Get("text")
			if sc.Mutate {
				args.Set("text", "body mutation")
				callerArgs.Set("text", "caller mutation") // the caller's own object, mid-call
				if again, _ := call.Args().(*jsonv.Object).Get("text"); again != "hello" {
					tb.Errorf("the body's arguments changed under it: %v", again)
				}
			}
			if sc.Defer {
				call.DeferContext(msg("deferred", "d"))
			}
			if sc.Conclude {
				call.ConcludeTurn()
				o.concluded++
			}
			switch sc.Body {
			case 1:
				return nil, errors.New("body failed")
			case 2:
				panic("body panicked")
			case 3:
				return map[string]any{"text": 1}, nil
			case 4:
				cancel()
			case 5:
				return nil, tool.NewError("HarnessError", "TOOL_FAILURE", "tool failed")
			}
			return map[string]any{"text": text}, nil
		},
	}
	switch sc.Finalizer {
	case 1:
		def.FinalizeContent = func(_ *tool.Execution, res *tool.Result) ([]content.Block, error) {
			o.finalizes++
			if sc.Mutate && len(res.Content) > 0 {
				res.Content[0].Text = "finalizer mutation"
			}
			return nil, nil
		}
	case 2:
		def.FinalizeContent = func(_ *tool.Execution, res *tool.Result) ([]content.Block, error) {
			o.finalizes++
			return content.Texts("final:" + firstText(res)), nil
		}
	case 3:
		def.FinalizeContent = func(*tool.Execution, *tool.Result) ([]content.Block, error) {
			o.finalizes++
			return nil, errors.New("finalizer failed")
		}
	}
	register(tb, reg, def)
	agent := reg.NewScope("agent", nil)
	reg.SetApprover(tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.ApprovalOutcome, error) {
		if sc.Pre == 2 {
			return tool.ApprovalAllowedOnce, nil
		}
		return tool.ApprovalRejected, nil
	}))
	reg.OnPreExecute(func(_ context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		if sc.Mutate {
			if a, ok := exec.Args(); ok {
				a.(*jsonv.Object).Set("text", "pre mutation")
			}
		}
		switch sc.Pre {
		case 1:
			return tool.Deny("denied"), nil
		case 2, 3:
			return tool.Ask("asking"), nil
		case 4:
			return tool.PreDecision{}, errors.New("pre failed")
		case 5:
			panic("pre panicked")
		case 6:
			cancel()
		}
		return next()
	})
	switch sc.Guard {
	case 1:
		reg.Guard(func(*tool.Execution) string { return "guarded" })
	case 2:
		reg.Guard(func(*tool.Execution) string { panic("guard panicked") })
	}
	if sc.Wrapper > 0 {
		reg.WrapExecute(func(ctx context.Context, _ *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
			switch sc.Wrapper {
			case 2:
				return &tool.Result{Value: map[string]any{"text": "short"}, AdditionalContexts: []content.Message{msg("wrapper", "w")}}, nil
			case 3:
				return tool.Denied("wrapper failure"), nil
			case 4:
				return nil, errors.New("wrapper failed")
			case 5:
				return &tool.Result{Value: "not an object"}, nil
			}
			res, err := next(ctx)
			if sc.Mutate && res != nil {
				res.Value = "wrapper mutation"
				res.Content = nil
				res.IsError = !res.IsError
			}
			return res, err
		})
	}
	if sc.Post > 0 {
		reg.OnPostExecute(func(_ context.Context, _ *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			o.posts++
			if sc.Mutate {
				res.Value = "post mutation"
				res.Content = content.Texts("post mutation")
			}
			switch sc.Post {
			case 1:
				return tool.Accept(msg("post", "p")), nil
			case 2:
				return tool.PostDecision{ReplaceContent: true, Content: content.Texts("replaced")}, nil
			case 3:
				return tool.PostDecision{ReplaceValue: true, Value: map[string]any{"text": "replaced value"}}, nil
			case 4:
				return tool.PostDecision{ReplaceValue: true, Value: 1.0}, nil
			case 5:
				return tool.BlockWith(content.Texts("blocked"), msg("blocker", "b")), nil
			case 6:
				return tool.PostDecision{}, errors.New("post failed")
			case 7:
				return tool.PostDecision{ReplaceValue: true, Value: "v", ReplaceContent: true}, nil
			case 8:
				cancel()
			}
			return next()
		})
	}
	reg.OnResult(func(_ context.Context, _ *tool.Execution, res *tool.Result) error {
		o.results++
		o.observed = resultJSON(tb, res)
		if sc.Mutate {
			res.Content = nil
			res.Value = "listener mutation"
			res.IsError = !res.IsError
		}
		return nil
	})
	var args any = callerArgs
	if sc.LossyArgs {
		args = map[string]any{"f": func() {}}
	}
	if sc.PreAbort {
		cancel()
	}
	o.res = reg.Execute(ctx, tool.Input{CallID: "c", Name: sc.Name, Args: args, Agent: agent})
	return o
}

// TestPropertyPipelineInvariants: whatever the hooks, body and cancellation do, the call ends
// in exactly one result that keeps the invariants of docs/behaviour.md §5.1, seen identically by the
// result listeners, with the finalizer run at most once.
func TestPropertyPipelineInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := drawScenario(t)
		o := runScenario(t, sc)
		res := o.res
		checkInvariants(t, res)
		if o.results != 1 || o.observed != resultJSON(t, res) {
			t.Fatalf("listeners: %d notifications, saw %s, returned %s", o.results, o.observed, resultJSON(t, res))
		}
		if o.bodies > 1 || o.posts > 1 {
			t.Fatalf("body ran %d times, post-execute %d times", o.bodies, o.posts)
		}
		wantFinalizes := 0
		if sc.Finalizer > 0 && sc.Name == "t" {
			wantFinalizes = 1
		}
		if o.finalizes != wantFinalizes {
			t.Fatalf("finalizer ran %d times, want %d", o.finalizes, wantFinalizes)
		}
		code := ""
		if res.IsError && res.Error.Info != nil {
			code = res.Error.Info.Code
		}
		if o.bodies == 0 && code == tool.CodeAborted {
			t.Fatal("ABORTED without a body run")
		}
		if res.ConcludesTurn && o.concluded == 0 {
			t.Fatal("concludesTurn without ConcludeTurn")
		}
		if sc.LossyArgs {
			if res.Error == nil || res.Error.Message != "tool execution arguments must be losslessly JSON-serializable" && sc.Finalizer != 3 {
				t.Fatalf("lossy arguments: %s", resultJSON(t, res))
			}
		} else if sc.PreAbort && sc.Finalizer != 3 && code != tool.CodeAbortedBeforeDispatch {
			t.Fatalf("pre-aborted: %s", resultJSON(t, res))
		}
		if !sc.PreAbort && !sc.LossyArgs && sc.Pre == 5 && sc.Finalizer != 3 && (res.Error == nil || !strings.HasSuffix(res.Error.Message, `": a pre-execute hook panicked: pre panicked`) || code != tool.CodeToolPanic) {
			t.Fatalf("a panicking pre-execute hook: %s", resultJSON(t, res))
		}
	})
}

// TestPropertySnapshotIndependence: stages that mutate everything they are given (their
// argument copies, the results handed to wrappers, post-execute hooks, renderers, finalizers
// and listeners, even the caller's argument object mid-call) cannot change the authoritative
// result.
func TestPropertySnapshotIndependence(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := drawScenario(t)
		sc.Mutate = false
		clean := runScenario(t, sc)
		sc.Mutate = true
		dirty := runScenario(t, sc)
		if a, b := resultJSON(t, clean.res), resultJSON(t, dirty.res); a != b {
			t.Fatalf("mutation changed the result:\nclean %s\ndirty %s", a, b)
		}
	})
}

// regModel is a direct transcription of docs/behaviour.md §3.4 over the registrations a test made.
type regModel struct {
	scopes []*tool.Scope                 // index 0 is the global scope
	tools  map[*tool.Scope][]string      // registration order
	filts  map[*tool.Scope][]tool.Filter // restrictions in order
	modes  map[*tool.Scope]tool.Mode     // declared modes
	undo   map[*tool.Scope]map[string]func()
}

func (m *regModel) chain(s *tool.Scope) []*tool.Scope {
	var c []*tool.Scope
	for x := s; x != nil && !x.IsGlobal(); x = x.Parent() {
		c = append([]*tool.Scope{x}, c...)
	}
	return c
}

func (m *regModel) admits(s *tool.Scope, name string) bool {
	for _, f := range m.filts[s] {
		if f.Allow != nil && !slices.Contains(f.Allow, name) || slices.Contains(f.Deny, name) {
			return false
		}
	}
	return true
}

func (m *regModel) names(s *tool.Scope, def tool.Mode) []string {
	chain := m.chain(s)
	var inherited []string
	add := func(list *[]string, n string) {
		if !slices.Contains(*list, n) {
			*list = append(*list, n)
		}
	}
	for _, n := range m.tools[m.scopes[0]] {
		add(&inherited, n)
	}
	for _, x := range chain {
		if x == s {
			break
		}
		for _, n := range m.tools[x] {
			add(&inherited, n)
		}
	}
	var visible []string
	for _, n := range inherited {
		ok := true
		for _, x := range chain {
			ok = ok && m.admits(x, n)
		}
		if ok {
			visible = append(visible, n)
		}
	}
	if !s.IsGlobal() {
		for _, n := range m.tools[s] {
			add(&visible, n)
		}
	}
	mode := def
	for i := len(chain) - 1; i >= 0; i-- {
		if md, ok := m.modes[chain[i]]; ok {
			mode = md
			break
		}
	}
	if mode != tool.ModeNative {
		visible = append(visible, "run_code")
	}
	return visible
}

// TestPropertyRegistryView drives random registrations, removals, restrictions and
// presentation declarations over a small scope tree and checks every view against the
// model: restrictions intersect along chains, own tools are exempt, deny admits later
// globals, allow excludes them, and Get, Names, Definitions, Schemas and execution agree.
func TestPropertyRegistryView(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		def := rapid.SampledFrom([]tool.Mode{tool.ModeNative, tool.ModeNative, tool.ModeBoth}).Draw(t, "default")
		reg := newReg(t, tool.Config{Mode: def})
		root := reg.NewScope("root", nil)
		child := reg.NewScope("child", root)
		leaf := reg.NewScope("leaf", child)
		side := reg.NewScope("side", nil)
		m := &regModel{
			scopes: []*tool.Scope{reg.Global(), root, child, leaf, side},
			tools:  map[*tool.Scope][]string{}, filts: map[*tool.Scope][]tool.Filter{},
			modes: map[*tool.Scope]tool.Mode{}, undo: map[*tool.Scope]map[string]func(){},
		}
		names := []string{"a", "b", "c", "d"}
		steps := rapid.IntRange(1, 25).Draw(t, "steps")
		for range steps {
			s := rapid.SampledFrom(m.scopes).Draw(t, "scope")
			n := rapid.SampledFrom(names).Draw(t, "name")
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0, 1:
				undo, err := s.Register(strTool(n, s.Name()+":"+n))
				if slices.Contains(m.tools[s], n) {
					if err == nil {
						t.Fatalf("duplicate %s in %s accepted", n, s.Name())
					}
					continue
				}
				if err != nil {
					t.Fatalf("register %s in %s: %v", n, s.Name(), err)
				}
				m.tools[s] = append(m.tools[s], n)
				if m.undo[s] == nil {
					m.undo[s] = map[string]func(){}
				}
				m.undo[s][n] = undo
			case 2:
				if undo := m.undo[s][n]; undo != nil {
					undo()
					delete(m.undo[s], n)
					m.tools[s] = slices.DeleteFunc(m.tools[s], func(x string) bool { return x == n })
				}
			case 3:
				if s.IsGlobal() {
					continue
				}
				// Only inherited names may be named; draw from them.
				var inherited []string
				for _, x := range append([]*tool.Scope{reg.Global()}, m.chain(s)...) {
					if x != s {
						inherited = append(inherited, m.tools[x]...)
					}
				}
				if len(inherited) == 0 {
					continue
				}
				list := rapid.SliceOfN(rapid.SampledFrom(inherited), 0, 2).Draw(t, "list")
				f := tool.Filter{Deny: list}
				if rapid.Bool().Draw(t, "allow") {
					f = tool.Filter{Allow: list}
				}
				if _, err := s.Restrict(f); err != nil {
					t.Fatalf("restrict %s %+v: %v", s.Name(), f, err)
				}
				m.filts[s] = append(m.filts[s], f)
			case 4:
				if s.IsGlobal() || m.modes[s] != "" {
					continue
				}
				md := rapid.SampledFrom([]tool.Mode{tool.ModeNative, tool.ModeCode, tool.ModeBoth}).Draw(t, "mode")
				if _, err := s.PresentAs(md); err != nil {
					t.Fatal(err)
				}
				m.modes[s] = md
			}
		}
		for _, s := range m.scopes {
			want := m.names(s, def)
			got := reg.Names(s)
			if !slices.Equal(got, want) {
				t.Fatalf("Names(%s) = %v, model %v", s.Name(), got, want)
			}
			var defNames []string
			for _, d := range reg.Definitions(s) {
				defNames = append(defNames, d.Name)
			}
			schemas, err := reg.Schemas(s)
			if err != nil {
				t.Fatal(err)
			}
			var schemaNames []string
			for _, x := range schemas {
				schemaNames = append(schemaNames, x.Name)
			}
			if !slices.Equal(defNames, want) || !slices.Equal(schemaNames, want) {
				t.Fatalf("Definitions %v / Schemas %v disagree with %v", defNames, schemaNames, want)
			}
			for _, n := range names {
				visible := slices.Contains(want, n)
				if (reg.Get(n, s) != nil) != visible {
					t.Fatalf("Get(%s, %s) disagrees with the view", n, s.Name())
				}
				res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: n, Args: &jsonv.Object{}, Parent: &tool.Token{}, Agent: s})
				if visible == res.IsError {
					t.Fatalf("executing %s in %s: %s (visible %v)", n, s.Name(), resultJSON(t, res), visible)
				}
				if visible {
					// The definition that ran is the one Get returns (strTool bodies ignore the call).
					reply, _ := reg.Get(n, s).Execute(context.Background(), nil)
					if res.Value != reply {
						t.Fatalf("executing %s in %s ran %v, Get returns the tool of %v", n, s.Name(), res.Value, reply)
					}
				}
			}
		}
	})
}

// TestPropertyJSONSize: the argument cap measures exactly what jsonv.Marshal would write.
func TestPropertyJSONSize(t *testing.T) {
	controls := rapid.Map(rapid.SliceOfN(rapid.ByteRange(0, 0x7f), 0, 20), func(b []byte) any { return string(b) })
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.OneOf(jsonValue(4), controls).Draw(t, "value")
		b, err := jsonv.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := tool.JSONSize(v); got != len(b) {
			t.Fatalf("JSONSize = %d, Marshal wrote %d bytes: %s", got, len(b), b)
		}
	})
}
