package redact

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/policy/spill"
	"github.com/dsh-go/dsh/tool"
)

// fragments make up the texts the property draws: clean text, secrets, terminal control
// bytes and escape sequences, and text long enough to be spilled or looked up among the
// approved strings.
var fragments = []string{
	"hello", "AKIAIOSFODNN7EXAMPLE", "ghp_1234567890abcdefghijABCDEFGHIJ123456", "Zx9vQ2mL7pK4",
	"\x1b[31m", "\x1b[0m", "1%\r100%", "\x00", "\n", "\t", strings.Repeat("ordinary output\n", 20),
}

func drawText(t *rapid.T, label string) string {
	parts := rapid.SliceOfN(rapid.SampledFrom(fragments), 0, 4).Draw(t, label)
	return strings.Join(parts, "")
}

type mixIn struct {
	Text string   `json:"text"`
	List []string `json:"list"`
	Fail bool     `json:"fail,omitempty"`
}

type mixOut struct {
	Text string   `json:"text"`
	List []string `json:"list"`
}

// checkedWrap runs wrap and fails the test when wrap changed the result next returned.
func checkedWrap(t *rapid.T, wrap tool.ExecuteFunc) tool.ExecuteFunc {
	return func(ctx context.Context, exec *tool.Execution, next func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
		var handed, before *tool.Result
		res, err := wrap(ctx, exec, func(c context.Context) (*tool.Result, error) {
			r, err := next(c)
			if r != nil {
				handed, before = r, r.Clone()
			}
			return r, err
		})
		if handed != nil && !reflect.DeepEqual(handed, before) {
			t.Fatalf("the wrapper changed the result it was handed:\nbefore: %+v\n after: %+v", before, handed)
		}
		return res, err
	}
}

// checkedClean runs clean and fails the test when clean changed the result it was given.
func checkedClean(t *rapid.T, clean tool.AfterExecuteFunc) tool.AfterExecuteFunc {
	return func(ctx context.Context, exec *tool.Execution, res *tool.Result) (*tool.Result, error) {
		before := res.Clone()
		out, err := clean(ctx, exec, res)
		if !reflect.DeepEqual(res, before) {
			t.Fatalf("the after-execute hook changed the result it was given:\nbefore: %+v\n after: %+v", before, res)
		}
		return out, err
	}
}

// checkedPost runs post and fails the test when post changed the result it was given.
func checkedPost(t *rapid.T, post tool.PostExecuteFunc) tool.PostExecuteFunc {
	return func(ctx context.Context, exec *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		before := res.Clone()
		d, err := post(ctx, exec, res, next)
		if !reflect.DeepEqual(res, before) {
			t.Fatalf("the post-execute hook changed the result it was given:\nbefore: %+v\n after: %+v", before, res)
		}
		return d, err
	}
}

// TestPropertyHooksOnlyRead: the redaction and spill policies' hooks, which register
// ReadOnly, never change the result they are given, and a call ends exactly as it does when
// each hook gets a private copy — whether the policies clean, redact, spill or leave the
// result alone, on successes and failures, with contexts a later hook adds.
func TestPropertyHooksOnlyRead(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := mixIn{
			Text: drawText(t, "text"),
			List: []string{drawText(t, "item0"), drawText(t, "item1")},
			Fail: rapid.IntRange(0, 3).Draw(t, "fail") == 0,
		}
		hookContext := drawText(t, "context")
		run := func(readOnly bool) (string, []string, []string) {
			reg := newMixRegistry(t, tool.Render(func(_ mixIn, o mixOut) ([]content.Block, error) {
				return content.Texts("out: " + o.Text + "|" + strings.Join(o.List, "|")), nil
			}))
			var opts []tool.HookOption
			if readOnly {
				opts = append(opts, tool.ReadOnly())
			}
			var reports []string
			p, store, sp := newMixPolicies(t, &reports)
			g := reg.Global()
			// A later hook adding a context the policy cleans.
			addContextHook(g, hookContext)
			// Installed as Policy.Install and spill's Install do, but checked.
			g.OnPostExecute(checkedPost(t, sp.PostExecute), append([]tool.HookOption{tool.Prepend()}, opts...)...)
			g.AfterExecute(checkedClean(t, p.clean), append([]tool.HookOption{tool.Prepend()}, opts...)...)
			g.OnPostExecute(checkedPost(t, p.post), append([]tool.HookOption{tool.Prepend()}, opts...)...)
			g.OnResult(p.done, opts...)
			args, _ := toArgs(in)
			res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "mix", Args: args})
			b, err := res.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if n := p.live.Load(); n != 0 || len(p.calls) != 0 {
				t.Fatalf("%d records (%d counted) left after the call", len(p.calls), n)
			}
			return string(b), reports, store.texts
		}
		gotRes, gotReports, gotSaved := run(true)
		wantRes, wantReports, wantSaved := run(false)
		sameRuns(t, "read-only", "copies", gotRes, wantRes, gotReports, wantReports, gotSaved, wantSaved)
	})
}

// savedTexts is a spill store that keeps what it is given.
type savedTexts struct{ texts []string }

func (s *savedTexts) SaveText(_ context.Context, req spill.SaveRequest) (spill.Ref, error) {
	s.texts = append(s.texts, req.Text)
	return spill.Ref{Locator: "/spill/" + req.SuggestedName, Bytes: len(req.Text), RetrievalHint: "Read it."}, nil
}

// newMixRegistry returns a registry holding the "mix" tool, which echoes its texts or fails
// naming its text when asked to, built with opts.
func newMixRegistry(t interface{ Fatal(...any) }, opts ...tool.Option) *tool.Registry {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	mix := tool.Must(tool.New("mix", "Echoes its texts.", func(_ context.Context, _ *tool.Call, in mixIn) (mixOut, error) {
		if in.Fail {
			return mixOut{}, errors.New("failed on " + in.Text)
		}
		return mixOut{Text: in.Text, List: in.List}, nil
	}, opts...))
	if _, err := reg.Register(mix); err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestRecordsForgotten: whatever the policy recorded about a call (an original text, what
// it cleaned, approved strings) is forgotten when the call ends, so a clean call after it
// takes no lock.
func TestRecordsForgotten(t *testing.T) {
	reg := newMixRegistry(t)
	var reports int
	p := New(Config{Report: func(context.Context, *tool.Execution, Report) { reports++ }})
	if _, err := p.Install(reg.Global()); err != nil {
		t.Fatal(err)
	}
	for _, in := range []mixIn{
		{Text: "clean"},
		{Text: "AKIAIOSFODNN7EXAMPLE"},
		{Text: strings.Repeat("long clean text ", 20)},
		{Text: "\x1b[31mred", Fail: true},
	} {
		args, _ := toArgs(in)
		res := reg.Execute(t.Context(), tool.Input{CallID: "c1", Name: "mix", Args: args})
		if strings.Contains(resultText(res), "AKIA") || strings.Contains(resultText(res), "\x1b") {
			t.Errorf("%q: not cleaned: %q", in.Text, resultText(res))
		}
		if n := p.live.Load(); n != 0 || len(p.calls) != 0 {
			t.Fatalf("%q: %d records (%d counted) left after the call", in.Text, len(p.calls), n)
		}
	}
	if reports != 2 {
		t.Errorf("%d reports, want 2 (the secret and the escape sequence)", reports)
	}
}

func resultText(res *tool.Result) string {
	var b strings.Builder
	for _, bl := range res.Content {
		b.WriteString(bl.Text)
	}
	return b.String()
}

func toArgs(in mixIn) (any, error) { return jsonv.FromGo(in) }

// newMixPolicies returns the redaction policy of the mix properties (a secret-named
// environment value; its reports appended to reports) and a spill policy with a small
// inline limit that keeps its originals in store.
func newMixPolicies(t interface{ Fatal(...any) }, reports *[]string) (*Policy, *savedTexts, *spill.Policy) {
	p := New(Config{Env: []string{"SERVICE_TOKEN=Zx9vQ2mL7pK4"}, Report: func(_ context.Context, _ *tool.Execution, r Report) {
		*reports = append(*reports, r.String())
	}})
	store := &savedTexts{}
	sp, err := spill.New(spill.Config{MaxInlineBytes: 300, Store: store, Original: p.Original})
	if err != nil {
		t.Fatal(err)
	}
	return p, store, sp
}

// addContextHook adds a post-execute hook to g that adds a user message with text to
// whatever the later hooks decide: a context the redaction policy cleans.
func addContextHook(g *tool.Scope, text string) {
	g.OnPostExecute(func(_ context.Context, _ *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		d, err := next()
		d.AdditionalContexts = append(d.AdditionalContexts, content.Message{ID: "m", Role: content.RoleUser, Content: content.Texts(text)})
		return d, err
	})
}

// sameRuns fails t unless two runs, named got and want, gave the same result, reports and
// spilled texts.
func sameRuns(t interface{ Fatalf(string, ...any) }, got, want, gotRes, wantRes string, gotReports, wantReports, gotSaved, wantSaved []string) {
	if gotRes != wantRes {
		t.Fatalf("result\n%s: %s\n%s: %s", got, gotRes, want, wantRes)
	}
	if !reflect.DeepEqual(gotReports, wantReports) {
		t.Fatalf("reports\n%s: %q\n%s: %q", got, gotReports, want, wantReports)
	}
	if !reflect.DeepEqual(gotSaved, wantSaved) {
		t.Fatalf("spilled texts\n%s: %q\n%s: %q", got, gotSaved, want, wantSaved)
	}
}
