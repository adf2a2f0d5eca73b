// Package spill is the spill policy (docs/behaviour.md §11.3): it keeps oversized plain-text tool results
// out of the model's context. When a call's accepted result is all text and larger than
// MaxInlineBytes (UTF-8 bytes), the full text is saved to a spill store and the model sees a
// head/tail preview followed by a notice saying where the rest is:
//
//	<head of the text>…<tail of the text>
//
//	(Omitted <n> bytes. Full formatted result stored at: <locator>. <hint>)
//
// The replacement never exceeds MaxInlineBytes: the notice's size is reserved out of the
// budget first and the preview gets what is left. When even the notice alone does not fit,
// the result is kept as it was.
//
// The policy is a post-execute hook installed first (tool.Prepend), so it bounds whatever the
// later hooks accepted, including content they replaced. It leaves alone: blocks (their
// feedback is corrective), value replacements (the registry renders those), results holding a
// non-text block, nested Code Mode calls (their log copy is bounded by BoundDispatchLog
// instead) and the read tool (spilling a read would invite read → spill → read again).
// Failures are bounded like successes: a huge error text is as costly as a huge output.
//
// Spilling is best effort: when the store fails, the policy logs a warning and keeps the
// original result. It never turns a success into a failure or hides a result.
package spill

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// PluginID is the policy's plugin id, as in the reference harness.
const PluginID = "spill-policy"

// DefaultMaxInlineBytes is the cap the shipped configuration uses.
const DefaultMaxInlineBytes = 50000

// ReadToolName is the tool the model-facing arm never spills.
const ReadToolName = "read"

// Config configures the spill policy.
type Config struct {
	// MaxInlineBytes is the largest plain-text result, in UTF-8 bytes, that reaches the model
	// unchanged. Zero disables the policy (Install registers nothing); negative is an error.
	MaxInlineBytes int `yaml:"maxInlineBytes"`
	// Dir is the directory of the default local store; empty means a private directory
	// created under os.TempDir on first use. It is ignored when Store is set.
	Dir string `yaml:"dir"`
	// Store receives spilled texts; nil means a LocalStore in Dir.
	Store Store `yaml:"-"`
	// Logger receives the best-effort warnings; nil means slog.Default().
	Logger *slog.Logger `yaml:"-"`
	// Original, when set, returns the exact text a call's tool produced before another
	// policy cleaned it (policy/redact's Policy.Original): a spilled result's file then
	// holds those exact bytes while the inline preview shows the cleaned text.
	Original func(exec *tool.Execution) (string, bool) `yaml:"-"`
}

// DefaultConfig returns the shipped configuration: a 50000-byte cap and the default store.
func DefaultConfig() Config { return Config{MaxInlineBytes: DefaultMaxInlineBytes} }

// Validate reports a configuration error with the reference's load-time message.
func (c Config) Validate() error {
	if c.MaxInlineBytes < 0 {
		return fmt.Errorf("spill-policy: maxInlineBytes must be a non-negative integer (got %d)", c.MaxInlineBytes)
	}
	return nil
}

// UnmarshalYAML decodes the configuration and rejects a fractional or negative cap with the
// reference's message instead of truncating it. Unknown keys are an error.
func (c *Config) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(node.Content); i += 2 {
			if k := node.Content[i].Value; k != "maxInlineBytes" && k != "dir" {
				return fmt.Errorf("spill-policy: unknown config key %q (line %d)", k, node.Content[i].Line)
			}
		}
	}
	var raw struct {
		MaxInlineBytes *float64 `yaml:"maxInlineBytes"`
		Dir            string   `yaml:"dir"`
	}
	if err := node.Decode(&raw); err != nil {
		return fmt.Errorf("spill-policy: %w", err)
	}
	out := Config{Dir: raw.Dir, Store: c.Store, Logger: c.Logger}
	if m := raw.MaxInlineBytes; m != nil {
		if *m != math.Trunc(*m) || *m < 0 || *m > math.MaxInt32 || math.IsNaN(*m) {
			return fmt.Errorf("spill-policy: maxInlineBytes must be a non-negative integer (got %s)", jsNumber(*m))
		}
		out.MaxInlineBytes = int(*m)
	}
	*c = out
	return nil
}

func jsNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	if b, err := jsonv.Marshal(f); err == nil {
		return string(b)
	}
	return fmt.Sprint(f)
}

// Policy is a configured spill policy. It is safe for concurrent use.
type Policy struct {
	max      int // 0: disabled
	store    Store
	logger   *slog.Logger
	original func(*tool.Execution) (string, bool)
}

// New validates cfg and returns the policy.
func New(cfg Config) (*Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Policy{max: cfg.MaxInlineBytes, store: cfg.Store, logger: cfg.Logger, original: cfg.Original}
	if p.store == nil {
		p.store = NewLocalStore(cfg.Dir)
	}
	if p.logger == nil {
		p.logger = slog.Default()
	}
	return p, nil
}

// Enabled reports whether the policy bounds anything (MaxInlineBytes > 0).
func (p *Policy) Enabled() bool { return p.max > 0 }

// Install validates cfg and installs a new policy on scope; see Policy.Install.
func Install(scope *tool.Scope, cfg Config) (undo func(), err error) {
	p, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return p.Install(scope)
}

// Install adds the policy's post-execute hook to scope, before the hooks already there.
// A disabled policy registers nothing. The returned function removes the hook. The hook
// only reads the result (a spill replaces the content by a decision), so it registers
// tool.ReadOnly and costs the call no copy.
func (p *Policy) Install(scope *tool.Scope) (undo func(), err error) {
	if scope == nil {
		return nil, errors.New("spill-policy: Install needs a scope (use reg.Global() for every call)")
	}
	if !p.Enabled() {
		return func() {}, nil
	}
	return scope.OnPostDecision(p.decide, tool.Prepend(), tool.ReadOnly()), nil
}

// PostExecute is the model-facing arm: it lets the later hooks decide, then bounds the
// content of the accepted result.
func (p *Policy) PostExecute(ctx context.Context, exec *tool.Execution, res *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
	d, err := next()
	return p.decide(ctx, exec, res, d, err)
}

// decide is PostExecute once the later hooks decided d (or failed with err); Install
// registers it with OnPostDecision, which saves the call the closure for next.
func (p *Policy) decide(ctx context.Context, exec *tool.Execution, res *tool.Result, d tool.PostDecision, err error) (tool.PostDecision, error) {
	if err != nil || !p.Enabled() || d.Block || d.ReplaceValue || exec.Parent() != nil || exec.Name() == ReadToolName {
		return d, err
	}
	blocks := res.Content
	if d.ReplaceContent {
		blocks = d.Content
	}
	if n, ok := textSize(blocks); !ok || n <= p.max {
		return d, nil // decided from the size: the text is not joined
	}
	text, _ := plainText(blocks)
	exact := text
	if p.original != nil {
		if o, ok := p.original(exec); ok {
			exact = o
		}
	}
	replaced, ok := p.replacement(ctx, text, exact, exec.Name(), exec.CallID(), "result")
	if !ok {
		return d, nil
	}
	return tool.PostDecision{ReplaceContent: true, Content: content.Texts(replaced), AdditionalContexts: d.AdditionalContexts}, nil
}

// BoundDispatchLog is the durable-log arm for Code Mode: it bounds the copy of a sub-call's
// content that goes into the tool/code-dispatch log event, the same way PostExecute bounds a
// model-facing result (read included: a log copy is not model context). The program's own
// value is not affected. It returns blocks unchanged when nothing is to be bounded or the
// spill fails.
func (p *Policy) BoundDispatchLog(ctx context.Context, name, subCallID string, blocks []content.Block) []content.Block {
	if !p.Enabled() {
		return blocks
	}
	if n, ok := textSize(blocks); !ok || n <= p.max {
		return blocks
	}
	text, _ := plainText(blocks)
	replaced, ok := p.replacement(ctx, text, text, name, subCallID, "dispatch")
	if !ok {
		return blocks
	}
	return content.Texts(replaced)
}

// textSize returns the size in bytes of the texts of an all-text block list — the length
// of what plainText would join — without joining them; ok is false when a block is not
// text.
func textSize(blocks []content.Block) (n int, ok bool) {
	for i := range blocks {
		if blocks[i].Type != content.TypeText {
			return 0, false
		}
		n += len(blocks[i].Text)
	}
	return n, true
}

// plainText joins the texts of an all-text block list; ok is false when a block is not text.
func plainText(blocks []content.Block) (string, bool) {
	if len(blocks) == 1 && blocks[0].Type == content.TypeText {
		return blocks[0].Text, true
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type != content.TypeText {
			return "", false
		}
		b.WriteString(bl.Text)
	}
	return b.String(), true
}

// replacement saves exact (the tool's own text; text itself unless a policy cleaned it) and returns
// the bounded preview of text, or false to keep the original.
func (p *Policy) replacement(ctx context.Context, text, exact, name, callID, label string) (string, bool) {
	ref, err := p.store.SaveText(ctx, SaveRequest{ToolName: name, CallID: callID, Label: label, SuggestedName: name + ".txt", Text: exact})
	if err != nil {
		p.logger.Warn(fmt.Sprintf("spill-policy: saveText failed for %s: %v; keeping the inline content", name, err))
		return "", false
	}
	// Reserve the notice priced at the largest possible omission (the whole text): the real
	// count has at most as many digits, so the final notice fits in what was reserved. The
	// 2 is the blank line between preview and notice.
	reserve := len(Notice(len(text), ref)) + 2
	preview, omitted := HeadTail(text, max(0, p.max-reserve))
	notice := Notice(omitted, ref)
	out := notice
	if preview != "" {
		out = preview + "\n\n" + notice
	}
	if len(out) > p.max {
		p.logger.Warn(fmt.Sprintf("spill-policy: spill notice for %s exceeds maxInlineBytes; keeping the inline content", name))
		return "", false
	}
	return out, true
}

// Notice is the line that replaces the omitted middle of a spilled text.
func Notice(omitted int, ref Ref) string {
	omission := ""
	if omitted > 0 {
		omission = fmt.Sprintf("Omitted %d bytes.", omitted)
	}
	return "(" + omission + " Full formatted result stored at: " + ref.Locator + ". " + ref.RetrievalHint + ")"
}

// HeadTail keeps at most budget bytes of text — the first ⌈budget/2⌉ and the last
// ⌊budget/2⌋ — and reports how many bytes it left out. A cut never splits a UTF-8 sequence:
// a partial character at either cut is left out too (and counted). Text that fits is
// returned whole.
func HeadTail(text string, budget int) (kept string, omitted int) {
	total := len(text)
	if total <= budget {
		return text, 0
	}
	headCap, tailCap := (budget+1)/2, budget/2
	head := text[:headCap]
	tail := text[total-tailCap:]
	// Trim a character cut at the end of the head.
	if i := lastStart(head); i >= 0 && !utf8.FullRuneInString(head[i:]) {
		head = head[:i]
	}
	// Trim continuation bytes at the start of the tail.
	for len(tail) > 0 && tail[0]&0xC0 == 0x80 {
		tail = tail[1:]
	}
	return head + tail, total - len(head) - len(tail)
}

// lastStart returns the index of the last byte of s that is not a UTF-8 continuation byte
// (looking back at most 3 bytes), or -1.
func lastStart(s string) int {
	for i := len(s) - 1; i >= 0 && i >= len(s)-4; i-- {
		if s[i]&0xC0 != 0x80 {
			return i
		}
	}
	return -1
}
