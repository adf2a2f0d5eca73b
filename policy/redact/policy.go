// Package redact is the redaction policy: it keeps secrets and terminal control bytes out
// of what the model reads and what the session log keeps.
//
// Every result passes through it before the model sees it. Secrets — AWS access keys;
// GitHub, GitLab, Slack, OpenAI, Anthropic and DeepSeek tokens; PEM private keys; JSON Web
// Tokens (gitleaks' rules, see rules.go); and the values of the environment variables named
// like secrets (see SecretName) — are replaced by a marker naming their kind,
// "[REDACTED:aws-access-token]". Text is made clean (package internal/cleantext): terminal
// escape sequences removed, other control characters but "\n" and "\t" escaped, "\r"
// progress floods collapsed to their last state per line, binary data replaced by its size
// and SHA-256.
//
// # Where it hooks in
//
// A tool's result has three copies of its output: the canonical value (what `dsh call
// --json`, an MCP client's structuredContent and a Code Mode program receive), the content
// rendered from it (what the model reads and the session log keeps) and the presentation
// meta (kept by the log, rendered from the value too). The policy therefore works in two
// places. An after-execute hook (tool.Scope.AfterExecute), outermost, cleans the value the
// body returned — after every around-execute wrapper, as an outermost wrapper would, but
// without a frame around the body — and hands it back to the pipeline, which validates it
// and renders the content and meta again from the clean value; it cleans a failure's
// message and content directly. A post-execute
// hook, outermost (installed after policy/spill), cleans the content the other post-execute
// hooks decided on — the spill policy's preview, a denial's reason, a blocking policy's
// feedback — and every additional context.
//
// Contexts a tool body defers (tool.Call.DeferContext) are added by the pipeline after every
// wrapper, and a post-execute decision can only append contexts, so those are not cleaned:
// dsh's own tools defer only the results of Code Mode sub-calls, which were cleaned as
// results of their own.
//
// The exact bytes stay available: the spill policy saves what the tool rendered from its
// own, uncleaned value (Policy.Original hands it over), so a spilled result's file holds
// the secrets and bytes the model was spared, for the person who needs them.
package redact

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/cleantext"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// PluginID names the policy in errors.
const PluginID = "redact-policy"

// Config configures the policy (the configuration's "redact" section).
type Config struct {
	// Enabled turns the policy on or off (key "redact.enabled"); nil means on.
	Enabled *bool `yaml:"enabled"`
	// Env is the environment whose secret-named variables' values are redacted, as
	// os.Environ returns it; nil looks for none.
	Env []string `yaml:"-"`
	// Report, when set, is told once per call what was redacted or cleaned: kinds and
	// counts, never the secrets.
	Report func(ctx context.Context, exec *tool.Execution, r Report) `yaml:"-"`
}

// On reports whether the configuration enables the policy.
func (c Config) On() bool { return c.Enabled == nil || *c.Enabled }

// UnmarshalYAML decodes the "redact" section, rejecting unknown keys and non-boolean values.
func (c *Config) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: the redact section must be a mapping (line %d)", PluginID, node.Line)
	}
	out := *c
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		if k.Value != "enabled" {
			return fmt.Errorf("%s: unknown config key %q (line %d)", PluginID, k.Value, k.Line)
		}
		if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
			return fmt.Errorf("%s: enabled must be true or false, got %q (line %d)", PluginID, v.Value, v.Line)
		}
		b, err := strconv.ParseBool(v.Value)
		if err != nil {
			return fmt.Errorf("%s: enabled must be true or false, got %q (line %d)", PluginID, v.Value, v.Line)
		}
		out.Enabled = &b
	}
	*c = out
	return nil
}

// Report is what the policy did to one call's result.
type Report struct {
	// Secrets counts the secrets redacted, by kind.
	Secrets Counts
	// Text is what cleaning the text changed.
	Text cleantext.Report
}

// Changed reports whether anything was redacted or cleaned.
func (r Report) Changed() bool { return r.Secrets.Total() > 0 || r.Text.Changed() }

func (r *Report) add(o Report) {
	r.Secrets = r.Secrets.add(o.Secrets)
	r.Text = r.Text.Add(o.Text)
}

// String describes the report in a line: "redacted aws-access-token×1; removed 2 escape
// sequences".
func (r Report) String() string {
	var parts []string
	if r.Secrets.Total() > 0 {
		parts = append(parts, "redacted "+r.Secrets.String())
	}
	t := r.Text
	if t.Binary {
		parts = append(parts, "replaced binary data by a summary")
	}
	if t.Escapes > 0 {
		parts = append(parts, fmt.Sprintf("removed %d escape sequences", t.Escapes))
	}
	if t.Controls > 0 {
		parts = append(parts, fmt.Sprintf("escaped %d control characters", t.Controls))
	}
	if t.Overwrites > 0 {
		parts = append(parts, fmt.Sprintf("collapsed carriage returns on %d lines", t.Overwrites))
	}
	return strings.Join(parts, "; ")
}

// Policy is the installed redaction policy.
type Policy struct {
	on     bool
	red    *Redactor
	report func(context.Context, *tool.Execution, Report)

	mu    sync.Mutex
	calls map[*tool.Token]*record
	// live counts the records in calls: while it is zero (no call in flight has anything
	// recorded, the common case) the hooks that look a call up skip the lock.
	live atomic.Int64
}

// record is what the policy remembers about one call between its hooks.
type record struct {
	original    string // the content the tool rendered from its own value
	hasOriginal bool
	rep         Report
	// approved holds the long strings of the value the wrapper let through (clean): a
	// content text equal to one of them needs no second look.
	approved []string
}

// New returns the policy for cfg.
func New(cfg Config) *Policy {
	return &Policy{on: cfg.On(), red: NewRedactor(cfg.Env), report: cfg.Report, calls: map[*tool.Token]*record{}}
}

// Install installs a policy for cfg on scope; see Policy.Install.
func Install(scope *tool.Scope, cfg Config) (undo func(), err error) {
	return New(cfg).Install(scope)
}

// Install adds the policy's hooks to scope (the registry's global scope for every call):
// the outermost after-execute hook, the outermost post-execute hook — so install it
// after policy/spill — and a result listener that reports and forgets each call. A
// disabled policy installs nothing. The hooks only read the results they are given
// (cleaning returns new ones), so they register tool.ReadOnly and cost the call no copies.
func (p *Policy) Install(scope *tool.Scope) (undo func(), err error) {
	if scope == nil {
		return nil, errors.New(PluginID + ": Install needs a scope (use reg.Global() for every call)")
	}
	if !p.on {
		return func() {}, nil
	}
	undos := []func(){
		scope.AfterExecute(p.clean, tool.Prepend(), tool.ReadOnly()),
		scope.OnPostDecision(p.decide, tool.Prepend(), tool.ReadOnly()),
		scope.OnResult(p.done, tool.ReadOnly()),
	}
	return func() {
		for _, u := range undos {
			u()
		}
	}, nil
}

// Redactor returns the policy's secret finder.
func (p *Policy) Redactor() *Redactor { return p.red }

// Original returns the content text the tool rendered from its own value before the policy
// cleaned the value, when the policy changed it: the spill policy saves these exact bytes
// (spill.Config.Original).
func (p *Policy) Original(exec *tool.Execution) (string, bool) {
	if p.live.Load() == 0 {
		return "", false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.calls[exec.Token()]; r != nil && r.hasOriginal {
		return r.original, true
	}
	return "", false
}

func (p *Policy) note(exec *tool.Execution, rep Report, original *string) {
	if !rep.Changed() && original == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.record(exec)
	r.rep.add(rep)
	if original != nil {
		r.original, r.hasOriginal = *original, true
	}
}

// Text returns s redacted and cleaned, with what changed.
func (p *Policy) Text(s string) (string, Report) {
	if p.red.plainText(s) {
		return s, Report{} // what textAll returns for it, in one pass
	}
	return p.textAll(s)
}

// textAll is Text without the one-pass answer for short plain texts.
func (p *Policy) textAll(s string) (string, Report) {
	out, trep := cleantext.Clean(s)
	out, counts := p.red.String(out)
	if len(counts) > 0 {
		// A redaction shortens the text around what the binary heuristic weighs: what is
		// left may now read as binary data, and must be judged so now, or a second pass
		// would change it.
		var again cleantext.Report
		out, again = cleantext.Clean(out)
		trep = trep.Add(again)
	}
	return out, Report{Secrets: counts, Text: trep}
}

// clean cleans the result a body produced: a success's value (the pipeline renders content
// and meta again from it), a failure's message, content and meta. It returns res itself
// when nothing needed cleaning.
func (p *Policy) clean(_ context.Context, exec *tool.Execution, res *tool.Result) (*tool.Result, error) {
	var rep Report
	if !res.IsError {
		v, changed := p.value(res.Value, &rep)
		contexts := p.messages(res.AdditionalContexts, &rep)
		p.approve(exec, v)
		if !changed && sameMessages(contexts, res.AdditionalContexts) {
			return res, nil
		}
		original := plainText(res.Content)
		p.note(exec, rep, &original)
		return &tool.Result{Value: v, AdditionalContexts: contexts}, nil
	}
	out := res.Clone()
	out.Content = p.blocks(res.Content, &rep)
	if out.Error != nil {
		// the message repeats the content's text: counted there
		out.Error.Message, _ = p.Text(res.Error.Message)
	}
	if res.Meta != nil {
		out.Meta, _ = p.value(res.Meta, &rep)
	}
	out.AdditionalContexts = p.messages(res.AdditionalContexts, &rep)
	if !rep.Changed() && (res.Error == nil || out.Error.Message == res.Error.Message) {
		return res, nil
	}
	original := plainText(res.Content)
	p.note(exec, rep, &original)
	return out, nil
}

// decide cleans the content the post-execute hooks after it decided on, and their
// contexts.
func (p *Policy) decide(_ context.Context, exec *tool.Execution, res *tool.Result, d tool.PostDecision, err error) (tool.PostDecision, error) {
	if err != nil {
		return d, err
	}
	var rep Report
	switch {
	case d.Block:
		d.Feedback = p.blocks(d.Feedback, &rep)
	case d.ReplaceValue:
		d.Value, _ = p.value(d.Value, &rep)
	case d.ReplaceContent:
		d.Content = p.blocks(d.Content, &rep)
	default:
		var known []string
		if hasLongText(res.Content) {
			known = p.approvedTexts(exec)
		}
		if blocks := p.blocksExcept(res.Content, known, &rep); rep.Changed() {
			d.ReplaceContent, d.Content = true, blocks
		}
	}
	d.AdditionalContexts = p.messages(d.AdditionalContexts, &rep)
	p.note(exec, rep, nil)
	return d, nil
}

// done reports what the policy did to the call and forgets it.
func (p *Policy) done(ctx context.Context, exec *tool.Execution, _ *tool.Result) error {
	if p.live.Load() == 0 {
		return nil // nothing recorded for any call, this one included
	}
	p.mu.Lock()
	r := p.calls[exec.Token()]
	if r != nil {
		delete(p.calls, exec.Token())
		p.live.Add(-1)
	}
	p.mu.Unlock()
	if r != nil && r.rep.Changed() && p.report != nil {
		p.report(ctx, exec, r.rep)
	}
	return nil
}

func (p *Policy) text(s string, rep *Report) string {
	if p.red.plainText(s) {
		return s
	}
	out, r := p.Text(s)
	rep.add(r)
	return out
}

// value returns v with every string cleaned, sharing what did not change, and whether
// anything did. Member names are left alone.
func (p *Policy) value(v any, rep *Report) (any, bool) {
	switch x := v.(type) {
	case string:
		out := p.text(x, rep)
		if out == x {
			return v, false // the value as it was: boxing the text again would allocate
		}
		return out, true
	case []any:
		var out []any
		for i, e := range x {
			ne, changed := p.value(e, rep)
			if changed && out == nil {
				out = make([]any, len(x))
				copy(out, x[:i])
			}
			if out != nil {
				out[i] = ne
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case *jsonv.Object:
		var out []jsonv.Member
		members := x.Members()
		for i, m := range members {
			nv, changed := p.value(m.Value, rep)
			if changed && out == nil {
				out = make([]jsonv.Member, len(members))
				copy(out, members[:i])
			}
			if out != nil {
				out[i] = jsonv.Member{Name: m.Name, Value: nv}
			}
		}
		if out == nil {
			return v, false
		}
		return jsonv.NewObject(out...), true
	}
	return v, false
}

// approve remembers the long strings of the clean value the wrapper let through for the
// call. A value without any (most values) is not recorded at all: the post-execute hook
// then scans every text, which for texts shorter than minKnown is what it would do anyway.
func (p *Policy) approve(exec *tool.Execution, v any) {
	known := longStrings(nil, v)
	if len(known) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.record(exec).approved = known
}

// record returns the call's record, creating it when there is none; p.mu is held.
func (p *Policy) record(exec *tool.Execution) *record {
	r := p.calls[exec.Token()]
	if r == nil {
		r = &record{}
		p.calls[exec.Token()] = r
		p.live.Add(1)
	}
	return r
}

// minKnown is the length from which a content text is compared with the approved value's
// strings before it is scanned: shorter texts cost less to scan than to look up.
const minKnown = 256

// longStrings appends the strings of v at least minKnown bytes long to out.
func longStrings(out []string, v any) []string {
	switch x := v.(type) {
	case string:
		if len(x) >= minKnown {
			out = append(out, x)
		}
	case []any:
		for _, e := range x {
			out = longStrings(out, e)
		}
	case *jsonv.Object:
		for _, m := range x.Members() {
			out = longStrings(out, m.Value)
		}
	}
	return out
}

// approvedTexts returns the long strings of the value the wrapper approved for the call.
func (p *Policy) approvedTexts(exec *tool.Execution) []string {
	if p.live.Load() == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.calls[exec.Token()]; r != nil {
		return r.approved
	}
	return nil
}

// hasLongText reports whether a text block (nested ones included) is at least minKnown
// bytes long: only such a text is looked up among the approved strings.
func hasLongText(bs []content.Block) bool {
	for i := range bs {
		b := &bs[i]
		if b.Type == content.TypeText && len(b.Text) >= minKnown || b.Type == content.TypeToolResult && hasLongText(b.Content) {
			return true
		}
	}
	return false
}

// blocks returns the blocks with their texts cleaned (nested tool-result blocks too).
func (p *Policy) blocks(bs []content.Block, rep *Report) []content.Block {
	return p.blocksExcept(bs, nil, rep)
}

// blocksExcept is blocks, taking texts equal to one of known as clean.
func (p *Policy) blocksExcept(bs []content.Block, known []string, rep *Report) []content.Block {
	var out []content.Block
	for i, b := range bs {
		nb := b
		switch b.Type {
		case content.TypeText:
			if len(b.Text) < minKnown || !slices.Contains(known, b.Text) {
				nb.Text = p.text(b.Text, rep)
			}
		case content.TypeToolResult:
			nb.Content = p.blocksExcept(b.Content, known, rep)
		}
		if nb.Text != b.Text || (b.Type == content.TypeToolResult && !sameBlocks(nb.Content, b.Content)) {
			if out == nil {
				out = make([]content.Block, len(bs))
				copy(out, bs[:i])
			}
		}
		if out != nil {
			out[i] = nb
		}
	}
	if out == nil {
		return bs
	}
	return out
}

func sameBlocks(a, b []content.Block) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// messages returns the messages with their blocks cleaned: ms itself when nothing changed.
func (p *Policy) messages(ms []content.Message, rep *Report) []content.Message {
	var out []content.Message
	for i, m := range ms {
		blocks := p.blocks(m.Content, rep)
		if !sameBlocks(blocks, m.Content) && out == nil {
			out = make([]content.Message, len(ms))
			copy(out, ms[:i])
		}
		if out != nil {
			out[i] = m
			out[i].Content = blocks
		}
	}
	if out == nil {
		return ms
	}
	return out
}

func sameMessages(a, b []content.Message) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// plainText is the concatenated text of the text blocks.
func plainText(bs []content.Block) string {
	if len(bs) == 1 && bs[0].Type == content.TypeText {
		return bs[0].Text
	}
	var b strings.Builder
	for _, bl := range bs {
		if bl.Type == content.TypeText {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}
