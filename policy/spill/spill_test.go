package spill_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/policy/spill"
	"github.com/dsh-go/dsh/tool"
)

// stubStore records saves and answers with a fixed locator, like the reference's tests.
type stubStore struct {
	mu    sync.Mutex
	saves []spill.SaveRequest
	fail  bool
}

func (s *stubStore) SaveText(_ context.Context, req spill.SaveRequest) (spill.Ref, error) {
	if s.fail {
		return spill.Ref{}, errors.New("disk full")
	}
	s.mu.Lock()
	s.saves = append(s.saves, req)
	s.mu.Unlock()
	return spill.Ref{Locator: "/spill/" + req.SuggestedName, Bytes: len(req.Text), RetrievalHint: "Use the stub retrieval path."}, nil
}

func (s *stubStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.saves)
}

// contentTool is a tool whose content is blocks and whose value is "value".
func contentTool(name string, blocks []content.Block) *tool.Definition {
	return &tool.Definition{
		Name:        name,
		Description: "tool " + name,
		Parameters:  jsonv.NewObject(jsonv.Member{Name: "type", Value: "object"}),
		Output: tool.Output{
			Schema: &jsonv.Object{},
			Render: func(_, value any) ([]content.Block, error) {
				if value == "replaced" {
					return content.Texts(strings.Repeat("r", 1000)), nil
				}
				return content.Clone(blocks), nil
			},
		},
		Execute: func(context.Context, *tool.Call) (any, error) { return "value", nil },
	}
}

type fixture struct {
	reg   *tool.Registry
	store *stubStore
	logs  *bytes.Buffer
}

func newFixture(t *testing.T, max int, tools ...*tool.Definition) *fixture {
	t.Helper()
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range tools {
		if _, err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{reg: reg, store: &stubStore{}, logs: &bytes.Buffer{}}
	logger := slog.New(slog.NewTextHandler(f.logs, nil))
	if _, err := spill.Install(reg.Global(), spill.Config{MaxInlineBytes: max, Store: f.store, Logger: logger}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) run(name string) *tool.Result {
	return f.reg.Execute(context.Background(), tool.Input{CallID: "call-" + name, Name: name, Args: &jsonv.Object{}})
}

func text(blocks []content.Block) string {
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}

var headTail = strings.Repeat("HEAD", 200) + strings.Repeat("TAIL", 200) // 1600 bytes

// TestReplacement pins the replacement text byte for byte (computed independently from the
// reference algorithm): the notice is reserved first, the preview splits what is left, and
// the whole is within the cap.
func TestReplacement(t *testing.T) {
	f := newFixture(t, 200, contentTool("big", content.Texts(headTail)))
	res := f.run("big")
	want := strings.Repeat("HEAD", 12) + "HE" + "L" + strings.Repeat("TAIL", 12) +
		"\n\n(Omitted 1501 bytes. Full formatted result stored at: /spill/big.txt. Use the stub retrieval path.)"
	if res.IsError || len(res.Content) != 1 || res.Content[0].Text != want {
		t.Fatalf("content %q\nwant %q", text(res.Content), want)
	}
	if len(want) != 200 {
		t.Fatalf("golden is %d bytes", len(want))
	}
	if res.Value != "value" {
		t.Errorf("value %v, want it untouched", res.Value)
	}
	wantSave := []spill.SaveRequest{{ToolName: "big", CallID: "call-big", Label: "result", SuggestedName: "big.txt", Text: headTail}}
	if diff := cmp.Diff(wantSave, f.store.saves); diff != "" {
		t.Errorf("saves (-want +got):\n%s", diff)
	}
}

// TestMultibyteCuts checks neither cut splits a character and the omitted count is exact.
func TestMultibyteCuts(t *testing.T) {
	body := strings.Repeat("é", 300) // 600 bytes
	f := newFixture(t, 150, contentTool("big", content.Texts(body)))
	got := text(f.run("big").Content)
	want := strings.Repeat("é", 24) + "\n\n(Omitted 552 bytes. Full formatted result stored at: /spill/big.txt. Use the stub retrieval path.)"
	if got != want {
		t.Errorf("content %q\nwant %q", got, want)
	}
}

// TestPassThrough lists the results the policy leaves alone.
func TestPassThrough(t *testing.T) {
	big := content.Texts(strings.Repeat("x", 1000))
	tests := []struct {
		name  string
		max   int
		def   *tool.Definition
		input func(in tool.Input) tool.Input
		hook  tool.PostExecuteFunc
	}{
		{name: "disabled", max: 0, def: contentTool("big", big)},
		{name: "at the cap", max: 1000, def: contentTool("big", big)},
		{name: "a non-text block", max: 5, def: contentTool("big", []content.Block{content.Text(strings.Repeat("x", 100)), content.Reasoning("why")})},
		{name: "the read tool", max: 10, def: contentTool("read", big)},
		{name: "a nested call", max: 10, def: contentTool("big", big), input: func(in tool.Input) tool.Input {
			in.Parent = &tool.Token{}
			return in
		}},
		{name: "a block", max: 10, def: contentTool("big", content.Texts("small")), hook: func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			return tool.BlockWith(big), nil
		}},
		{name: "a value replacement", max: 10, def: contentTool("big", content.Texts("small")), hook: func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
			return tool.PostDecision{ReplaceValue: true, Value: "replaced"}, nil
		}},
		{name: "an empty result", max: 1, def: contentTool("big", nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.max, tt.def)
			if tt.hook != nil {
				f.reg.OnPostExecute(tt.hook)
			}
			in := tool.Input{CallID: "c1", Name: tt.def.Name, Args: &jsonv.Object{}}
			if tt.input != nil {
				in = tt.input(in)
			}
			got := f.reg.Execute(context.Background(), in)
			// The same call through a registry without the policy.
			plain, _ := tool.NewRegistry(tool.Config{})
			if _, err := plain.Register(tt.def); err != nil {
				t.Fatal(err)
			}
			if tt.hook != nil {
				plain.OnPostExecute(tt.hook)
			}
			want := plain.Execute(context.Background(), in)
			wantJSON, _ := want.MarshalJSON()
			gotJSON, _ := got.MarshalJSON()
			if string(wantJSON) != string(gotJSON) {
				t.Errorf("result differs from the policy-free one:\n got %s\nwant %s", gotJSON, wantJSON)
			}
			if n := f.store.count(); n != 0 {
				t.Errorf("%d saves, want none", n)
			}
			if f.logs.Len() != 0 {
				t.Errorf("warnings: %s", f.logs)
			}
		})
	}
}

// TestPassThroughContent checks a passed-through result is exactly what it would be without
// the policy.
func TestPassThroughContent(t *testing.T) {
	blocks := []content.Block{content.Text(strings.Repeat("x", 100)), content.Reasoning("why")}
	f := newFixture(t, 5, contentTool("mixed", blocks), contentTool("read", content.Texts(strings.Repeat("y", 100))))
	if got := f.run("mixed").Content; !cmp.Equal(got, blocks) {
		t.Errorf("mixed content %+v", got)
	}
	if got := text(f.run("read").Content); got != strings.Repeat("y", 100) {
		t.Errorf("read content %q", got)
	}
}

// TestBoundsDownstreamReplacement checks content a later hook put in is bounded too, and its
// contexts survive.
func TestBoundsDownstreamReplacement(t *testing.T) {
	f := newFixture(t, 200, contentTool("small", content.Texts("tiny")))
	note := content.Message{ID: "m1", Role: content.RoleUser, Content: content.Texts("note"), Source: &content.Source{Kind: "plugin", Plugin: "later"}}
	f.reg.OnPostExecute(func(context.Context, *tool.Execution, *tool.Result, func() (tool.PostDecision, error)) (tool.PostDecision, error) {
		return tool.PostDecision{ReplaceContent: true, Content: []content.Block{content.Text(strings.Repeat("HEAD", 200)), content.Text(strings.Repeat("TAIL", 200))}, AdditionalContexts: []content.Message{note}}, nil
	})
	res := f.run("small")
	if got := text(res.Content); len(got) > 200 || !strings.HasPrefix(got, "HEADHEAD") || !strings.HasSuffix(got, "Use the stub retrieval path.)") {
		t.Errorf("content %q", got)
	}
	if f.store.count() != 1 || f.store.saves[0].Text != headTail {
		t.Errorf("saves %+v", f.store.saves)
	}
	if len(res.AdditionalContexts) != 1 || res.AdditionalContexts[0].ID != "m1" {
		t.Errorf("contexts %+v", res.AdditionalContexts)
	}
}

// TestBoundsFailures checks a huge failure text is bounded like a success, keeping the error.
func TestBoundsFailures(t *testing.T) {
	reg, _ := tool.NewRegistry(tool.Config{})
	long := strings.Repeat("boom ", 400)
	def := contentTool("failing", nil)
	def.Execute = func(context.Context, *tool.Call) (any, error) {
		return nil, &tool.Error{Name: "X", Code: "X_FAILED", Message: long}
	}
	if _, err := reg.Register(def); err != nil {
		t.Fatal(err)
	}
	store := &stubStore{}
	if _, err := spill.Install(reg.Global(), spill.Config{MaxInlineBytes: 300, Store: store}); err != nil {
		t.Fatal(err)
	}
	res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "failing", Args: &jsonv.Object{}})
	if !res.IsError || res.Error.Message != long || res.Error.Info.Code != "X_FAILED" {
		t.Errorf("error changed: %+v", res.Error)
	}
	if got := text(res.Content); len(got) > 300 || !strings.HasPrefix(got, "Error: boom") {
		t.Errorf("content %q", got)
	}
	if store.count() != 1 || store.saves[0].Text != "Error: "+long {
		t.Errorf("saves %+v", store.saves)
	}
}

// TestBestEffort checks a failing store and a notice that cannot fit both keep the original
// result and log a warning.
func TestBestEffort(t *testing.T) {
	t.Run("store fails", func(t *testing.T) {
		f := newFixture(t, 200, contentTool("big", content.Texts(headTail)))
		f.store.fail = true
		res := f.run("big")
		if res.IsError || text(res.Content) != headTail {
			t.Errorf("result changed: %+v", res)
		}
		if !strings.Contains(f.logs.String(), "spill-policy: saveText failed for big: disk full; keeping the inline content") {
			t.Errorf("log %q", f.logs)
		}
	})
	t.Run("notice larger than the cap", func(t *testing.T) {
		f := newFixture(t, 4, contentTool("big", content.Texts("xxxxx")))
		if got := text(f.run("big").Content); got != "xxxxx" {
			t.Errorf("content %q", got)
		}
		if !strings.Contains(f.logs.String(), "spill-policy: spill notice for big exceeds maxInlineBytes; keeping the inline content") {
			t.Errorf("log %q", f.logs)
		}
	})
	t.Run("notice alone fits", func(t *testing.T) {
		notice := "(Omitted 2000 bytes. Full formatted result stored at: /spill/big.txt. Use the stub retrieval path.)"
		f := newFixture(t, len(notice)+2, contentTool("big", content.Texts(strings.Repeat("z", 2000))))
		if got := text(f.run("big").Content); got != notice {
			t.Errorf("content %q, want the notice alone", got)
		}
	})
}

// TestLocalStoreEndToEnd runs the policy with the default local store.
func TestLocalStoreEndToEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spill")
	reg, _ := tool.NewRegistry(tool.Config{})
	if _, err := reg.Register(contentTool("bash", content.Texts(headTail))); err != nil {
		t.Fatal(err)
	}
	if _, err := spill.Install(reg.Global(), spill.Config{MaxInlineBytes: 400, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "bash", Args: &jsonv.Object{}})
	got := text(res.Content)
	_, rest, ok := strings.Cut(got, "Full formatted result stored at: ")
	path, hint, ok2 := strings.Cut(rest, ". Use read")
	if !ok || !ok2 || hint != " with this absolute path and offset/limit; grep does not search it.)" {
		t.Fatalf("content %q", got)
	}
	if filepath.Dir(path) != dir || !strings.HasSuffix(path, "-bash.txt") {
		t.Errorf("spill path %q", path)
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != headTail {
		t.Errorf("spill file: %v, %d bytes", err, len(data))
	}
	if len(got) > 400 {
		t.Errorf("replacement %d bytes", len(got))
	}
}

// TestBoundDispatchLog checks the Code Mode log arm bounds read too and leaves non-text.
func TestBoundDispatchLog(t *testing.T) {
	store := &stubStore{}
	p, err := spill.New(spill.Config{MaxInlineBytes: 200, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got := p.BoundDispatchLog(ctx, "read", "parent-1:code:1", content.Texts(strings.Repeat("H", 2000)))
	if len(got) != 1 || len(got[0].Text) > 200 || !strings.Contains(got[0].Text, "Full formatted result stored at: /spill/read.txt") {
		t.Errorf("bounded %q", text(got))
	}
	if len(store.saves) != 1 || store.saves[0].Label != "dispatch" || store.saves[0].CallID != "parent-1:code:1" {
		t.Errorf("saves %+v", store.saves)
	}
	mixed := []content.Block{content.Text(strings.Repeat("x", 500)), content.Reasoning("r")}
	if got := p.BoundDispatchLog(ctx, "t", "s", mixed); !cmp.Equal(got, mixed) {
		t.Errorf("mixed content changed")
	}
	small := content.Texts("ok")
	if got := p.BoundDispatchLog(ctx, "t", "s", small); !cmp.Equal(got, small) {
		t.Errorf("small content changed")
	}
	off, _ := spill.New(spill.Config{Store: store})
	big := content.Texts(strings.Repeat("x", 500))
	if got := off.BoundDispatchLog(ctx, "t", "s", big); !cmp.Equal(got, big) || off.Enabled() {
		t.Errorf("disabled policy bounded")
	}
}

func TestUndoAndInstall(t *testing.T) {
	reg, _ := tool.NewRegistry(tool.Config{})
	if _, err := reg.Register(contentTool("big", content.Texts(headTail))); err != nil {
		t.Fatal(err)
	}
	store := &stubStore{}
	undo, err := spill.Install(reg.Global(), spill.Config{MaxInlineBytes: 200, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	undo()
	res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: "big", Args: &jsonv.Object{}})
	if text(res.Content) != headTail || store.count() != 0 {
		t.Error("policy active after undo")
	}
	if _, err := spill.Install(nil, spill.Config{}); err == nil {
		t.Error("Install(nil) succeeded")
	}
	if _, err := spill.Install(reg.Global(), spill.Config{MaxInlineBytes: -1}); err == nil || err.Error() != "spill-policy: maxInlineBytes must be a non-negative integer (got -1)" {
		t.Errorf("negative cap: %v", err)
	}
	if spill.DefaultConfig().MaxInlineBytes != 50000 {
		t.Error("default cap")
	}
}

func TestYAML(t *testing.T) {
	tests := []struct {
		in      string
		want    spill.Config
		wantErr string
	}{
		{in: "maxInlineBytes: 50000", want: spill.Config{MaxInlineBytes: 50000}},
		{in: "maxInlineBytes: 10\ndir: /tmp/x", want: spill.Config{MaxInlineBytes: 10, Dir: "/tmp/x"}},
		{in: "{}", want: spill.Config{}},
		{in: "maxInlineBytes: -1", wantErr: "spill-policy: maxInlineBytes must be a non-negative integer (got -1)"},
		{in: "maxInlineBytes: 1.5", wantErr: "spill-policy: maxInlineBytes must be a non-negative integer (got 1.5)"},
		{in: "maxInlineByte: 1", wantErr: `spill-policy: unknown config key "maxInlineByte" (line 1)`},
	}
	for _, tt := range tests {
		var got spill.Config
		err := yaml.Unmarshal([]byte(tt.in), &got)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !cmp.Equal(tt.want, got, cmp.Comparer(func(a, b spill.Store) bool { return a == b })) {
			t.Errorf("%q: %+v, %v", tt.in, got, err)
		}
	}
}

// TestOriginal: with Config.Original, the spill file holds the text the hook returns (what
// the tool produced before another policy cleaned it) while the preview shows the content.
func TestOriginal(t *testing.T) {
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(contentTool("big", content.Texts(headTail))); err != nil {
		t.Fatal(err)
	}
	store := &stubStore{}
	var asked []string
	original := func(exec *tool.Execution) (string, bool) {
		asked = append(asked, exec.CallID())
		return "EXACT " + headTail, exec.CallID() == "call-big"
	}
	if _, err := spill.Install(reg.Global(), spill.Config{MaxInlineBytes: 200, Store: store, Original: original}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"call-big", "other"} {
		res := reg.Execute(context.Background(), tool.Input{CallID: id, Name: "big", Args: &jsonv.Object{}})
		if got := text(res.Content); !strings.HasPrefix(got, "HEAD") || len(got) > 200 {
			t.Errorf("%s: preview %q", id, got)
		}
	}
	if len(store.saves) != 2 || store.saves[0].Text != "EXACT "+headTail || store.saves[1].Text != headTail {
		t.Errorf("saved %d texts: %.20q / %.20q", len(store.saves), store.saves[0].Text, store.saves[1].Text)
	}
	if len(asked) != 2 {
		t.Errorf("Original asked for %v", asked)
	}
}
