package redact_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/policy/redact"
	"github.com/dsh-go/dsh/policy/spill"
	"github.com/dsh-go/dsh/tool"
)

type echoIn struct {
	Text string `json:"text"`
	Fail bool   `json:"fail,omitempty"`
}

type echoOut struct {
	Out string `json:"out"`
}

type memStore struct {
	mu    sync.Mutex
	saved []string
}

func (m *memStore) SaveText(_ context.Context, req spill.SaveRequest) (spill.Ref, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saved = append(m.saved, req.Text)
	return spill.Ref{Locator: "/spill/" + req.SuggestedName, Bytes: len(req.Text), RetrievalHint: "Read it."}, nil
}

type reported struct {
	mu   sync.Mutex
	list []redact.Report
}

func (r *reported) add(_ context.Context, _ *tool.Execution, rep redact.Report) {
	r.mu.Lock()
	r.list = append(r.list, rep)
	r.mu.Unlock()
}

// setup builds a registry with an echo tool, the spill policy (300 bytes inline) and the
// redaction policy installed after it, as cmd/dsh does.
func setup(t *testing.T, cfg redact.Config) (*tool.Registry, *memStore, *reported) {
	t.Helper()
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	echo := tool.Must(tool.New("echo", "Echoes text.", func(_ context.Context, _ *tool.Call, in echoIn) (echoOut, error) {
		if in.Fail {
			return echoOut{}, errors.New("failed on " + in.Text)
		}
		return echoOut{Out: in.Text}, nil
	}, tool.Render(func(_ echoIn, o echoOut) ([]content.Block, error) { return content.Texts("out: " + o.Out), nil })))
	if _, err := reg.Register(echo); err != nil {
		t.Fatal(err)
	}
	store, rep := &memStore{}, &reported{}
	cfg.Report = rep.add
	p := redact.New(cfg)
	undoSpill, err := spill.Install(reg.Global(), spill.Config{MaxInlineBytes: 300, Store: store, Original: p.Original})
	if err != nil {
		t.Fatal(err)
	}
	undo, err := p.Install(reg.Global())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { undo(); undoSpill() })
	return reg, store, rep
}

func call(reg *tool.Registry, in echoIn) *tool.Result {
	args, _ := jsonv.FromGo(in)
	return reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "echo", Args: args})
}

func text(res *tool.Result) string {
	var b strings.Builder
	for _, bl := range res.Content {
		b.WriteString(bl.Text)
	}
	return b.String()
}

func TestPolicyCleansValueAndContent(t *testing.T) {
	reg, store, rep := setup(t, redact.Config{Env: []string{"SERVICE_TOKEN=Zx9vQ2mL7pK4"}})
	res := call(reg, echoIn{Text: "key AKIAIOSFODNN7EXAMPLE tok Zx9vQ2mL7pK4 \x1b[31mred\x1b[0m\n1%\r100%"})
	want := "key [REDACTED:aws-access-token] tok [REDACTED:env:SERVICE_TOKEN] red\n100%"
	if res.IsError || text(res) != "out: "+want {
		t.Fatalf("content %q (error %v)", text(res), res.IsError)
	}
	if out, _ := res.Value.(*jsonv.Object).Get("out"); out != want {
		t.Errorf("value %q, want %q", out, want)
	}
	if len(store.saved) != 0 {
		t.Errorf("a small result was spilled: %q", store.saved)
	}
	if len(rep.list) != 1 || rep.list[0].Secrets["aws-access-token"] != 1 || rep.list[0].Secrets["env:SERVICE_TOKEN"] != 1 ||
		rep.list[0].Text.Escapes != 2 || rep.list[0].Text.Overwrites != 1 {
		t.Errorf("reports %+v", rep.list)
	}
	if s := rep.list[0].String(); strings.Contains(s, "AKIA") || !strings.Contains(s, "aws-access-token×1") {
		t.Errorf("report line %q", s)
	}
}

func TestPolicyCleanResultUntouched(t *testing.T) {
	reg, _, rep := setup(t, redact.Config{})
	res := call(reg, echoIn{Text: "nothing to see\n"})
	if text(res) != "out: nothing to see\n" || len(rep.list) != 0 {
		t.Errorf("content %q, reports %v", text(res), rep.list)
	}
}

func TestPolicyFailure(t *testing.T) {
	reg, _, rep := setup(t, redact.Config{})
	res := call(reg, echoIn{Text: "ghp_1234567890abcdefghijABCDEFGHIJ123456", Fail: true})
	if !res.IsError || res.Error.Message != "failed on [REDACTED:github-pat]" || text(res) != "Error: failed on [REDACTED:github-pat]" {
		t.Fatalf("failure %+v content %q", res.Error, text(res))
	}
	if len(rep.list) != 1 || rep.list[0].Secrets["github-pat"] != 1 {
		t.Errorf("reports %+v", rep.list)
	}
}

// TestPolicySpillKeepsExactBytes: a result too large to show is spilled with the exact
// text the tool produced, while the preview and the value the model gets are clean.
func TestPolicySpillKeepsExactBytes(t *testing.T) {
	reg, store, _ := setup(t, redact.Config{})
	raw := "AKIAIOSFODNN7EXAMPLE \x1b[1mbold\x1b[0m " + strings.Repeat("line of output\n", 60) + "tail AKIAIOSFODNN7EXAMPLE"
	res := call(reg, echoIn{Text: raw})
	if len(store.saved) != 1 || store.saved[0] != "out: "+raw {
		t.Fatalf("spilled %q, want the exact text", store.saved)
	}
	got := text(res)
	if strings.Contains(got, "AKIA") || strings.Contains(got, "\x1b") || !strings.Contains(got, "[REDACTED:aws-access-token]") ||
		!strings.Contains(got, "Full formatted result stored at: /spill/echo.txt") || len(got) > 300 {
		t.Errorf("preview %q", got)
	}
	if out, _ := res.Value.(*jsonv.Object).Get("out"); strings.Contains(out.(string), "AKIA") {
		t.Errorf("value %q keeps the secret", out)
	}
}

func TestPolicyDenialReason(t *testing.T) {
	reg, _, _ := setup(t, redact.Config{})
	reg.OnPreExecute(func(ctx context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
		return tool.Deny("refused: " + exec.ArgsJSON()), nil
	})
	res := call(reg, echoIn{Text: "\x07 AKIAIOSFODNN7EXAMPLE"})
	if got := text(res); !res.IsError || strings.Contains(got, "AKIA") || !strings.Contains(got, "[REDACTED:aws-access-token]") {
		t.Errorf("denial %q", got)
	}
}

func TestPolicyDisabled(t *testing.T) {
	off := false
	reg, _, rep := setup(t, redact.Config{Enabled: &off})
	res := call(reg, echoIn{Text: "AKIAIOSFODNN7EXAMPLE"})
	if text(res) != "out: AKIAIOSFODNN7EXAMPLE" || len(rep.list) != 0 {
		t.Errorf("disabled policy changed %q", text(res))
	}
}

func TestInstallNeedsScope(t *testing.T) {
	if _, err := redact.Install(nil, redact.Config{}); err == nil || !strings.Contains(err.Error(), "needs a scope") {
		t.Errorf("err = %v", err)
	}
}

func BenchmarkPolicy(b *testing.B) {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		b.Fatal(err)
	}
	// A tool that returns 10 KB of ordinary output, called with no arguments: what is
	// measured is the result's way through the pipeline.
	out := tool.Must(tool.New("out", "Prints output.", func(_ context.Context, _ *tool.Call, _ struct{}) (string, error) { return ordinary, nil }))
	if _, err := reg.Register(out); err != nil {
		b.Fatal(err)
	}
	args := &jsonv.Object{}
	run := func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "out", Args: args})
		}
	}
	b.Run("without", run)
	if _, err := redact.Install(reg.Global(), redact.Config{Env: []string{"GITHUB_TOKEN=Zx9vQ2mL7pK4"}}); err != nil {
		b.Fatal(err)
	}
	b.Run("with", run)
}

// FuzzText: what the policy does to a text (clean, then redact) never panics, leaves no
// control character but newline and tab, and changes nothing when done again.
func FuzzText(f *testing.F) {
	for _, s := range []string{"", "AKIAIOSFODNN7EXAMPLE", "\x1b[31m ghp_1234567890abcdefghijABCDEFGHIJ123456\x1b[0m", "1%\r2%\n", "a\x00b"} {
		f.Add(s)
	}
	p := redact.New(redact.Config{Env: []string{"APP_TOKEN=Qw3rty!Uiop9"}})
	f.Fuzz(func(t *testing.T, in string) {
		in = strings.ToValidUTF8(in, "\uFFFD")
		out, _ := p.Text(in)
		for _, r := range out {
			if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
				t.Fatalf("Text(%q) = %q holds %U", in, out, r)
			}
		}
		if again, rep := p.Text(out); again != out || rep.Changed() {
			t.Fatalf("not idempotent: Text(%q) = %q, then %q (%v)", in, out, again, rep)
		}
	})
}

// TestPolicyCleansHookContexts: a context another post-execute hook adds is cleaned too.
func TestPolicyCleansHookContexts(t *testing.T) {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	echo := tool.Must(tool.New("echo", "Echoes text.", func(_ context.Context, _ *tool.Call, in echoIn) (string, error) { return in.Text, nil }))
	if _, err := reg.Register(echo); err != nil {
		t.Fatal(err)
	}
	reg.OnPostExecute(func(ctx context.Context, exec *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		return tool.Accept(content.Message{Role: content.RoleUser, Content: content.Texts("note: \x1b[1mAKIAIOSFODNN7EXAMPLE")}), nil
	})
	if _, err := redact.Install(reg.Global(), redact.Config{}); err != nil {
		t.Fatal(err)
	}
	res := call(reg, echoIn{Text: "hi"})
	if len(res.AdditionalContexts) != 1 || res.AdditionalContexts[0].Content[0].Text != "note: [REDACTED:aws-access-token]" {
		t.Errorf("contexts %+v", res.AdditionalContexts)
	}
}

// TestPolicyRenderedExtras: a content text the tool renders beyond its (clean) value is
// still cleaned — only texts equal to a string of the approved value skip the second scan.
func TestPolicyRenderedExtras(t *testing.T) {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("clean line\n", 40)
	out := tool.Must(tool.New("out", "Prints output.", func(_ context.Context, _ *tool.Call, _ struct{}) (string, error) { return long, nil },
		tool.Render(func(_ struct{}, v string) ([]content.Block, error) {
			return []content.Block{{Type: content.TypeText, Text: v}, {Type: content.TypeText, Text: "\x1b[31m AKIAIOSFODNN7EXAMPLE " + v}}, nil
		})))
	if _, err := reg.Register(out); err != nil {
		t.Fatal(err)
	}
	if _, err := redact.Install(reg.Global(), redact.Config{}); err != nil {
		t.Fatal(err)
	}
	res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "out", Args: &jsonv.Object{}})
	if len(res.Content) != 2 || res.Content[0].Text != long || res.Content[1].Text != " [REDACTED:aws-access-token] "+long {
		t.Errorf("content %+v", res.Content)
	}
}
