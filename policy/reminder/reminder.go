// Package reminder is the repeat-tool reminder (docs/behaviour.md §11.2): an advisory policy that notices
// an agent calling the same tool with the same arguments over and over, and adds a reminder
// to the model's next request. It never vetoes or rewrites a call.
//
// # Chains
//
// Each agent (a *tool.Scope) has one chain: the last tracked call's tool name and canonical
// arguments, and how many times in a row it was made. A tracked call with the same name and
// arguments extends the chain; any other tracked call starts a new one at 1. Calls without an
// agent are ignored, and calls of untracked tools are transparent: they neither count nor
// break a chain. A tool is tracked when Include is empty or one of its patterns matches the
// name, and no Exclude pattern does; patterns are anchored, "*" matches any sequence and
// every other character is literal.
//
// Canonical arguments are the arguments with object members sorted recursively (JavaScript
// key order), encoded compactly (jsonv.Canonical), so member order never matters.
//
// Counting happens in post-execute, so denied calls, unknown tools and failures count too —
// a model hammering a denied call is exactly the loop worth breaking. Calls that end before
// post-execute (arguments not lossless JSON, a Code Mode collapse, a call cancelled before it
// started, a failing hook) do not.
//
// When a chain's length reaches a threshold, the call's result carries an additional context:
// a user-role message with source {kind: plugin, plugin: repeat-tool-reminder, form: notice,
// summary: "<name> × <count>"}, holding GentleText at the smallest threshold and
// DetailedText at the others. Past the largest threshold nothing more is said.
//
// The reminder is added after the later post-execute hooks decided: it is prepended to the
// additional contexts of their decision, which is otherwise kept (a block keeps its feedback,
// a replacement its value or content).
//
// # Resets
//
// A message the user types changes the situation, so repetition across it is not a loop: the
// agent loop calls PreStep (or Reset) before a step whose claimed messages include one with
// source kind "user". Chains live in memory only; a chain is dropped when its agent scope is
// garbage-collected.
package reminder

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
	"weak"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/ids"
	"github.com/dsh-go/dsh/policy/internal/wildcard"
	"github.com/dsh-go/dsh/tool"
)

// PluginID is the policy's plugin id; it is the source plugin of every reminder message.
const PluginID = "repeat-tool-reminder"

// GentleText is the reminder at the first threshold.
const GentleText = "You are repeating the exact same tool call with identical arguments. " +
	"Carefully analyze the previous result before calling again: if the task is " +
	"not complete, try a different approach or different arguments instead of " +
	"repeating the call."

// DetailedText is the reminder at the later thresholds. arguments is the (possibly
// shortened) canonical arguments.
func DetailedText(name string, count int, arguments string) string {
	return "Repeated tool call detected:\n" +
		"- tool: " + name + "\n" +
		"- consecutive_calls: " + strconv.Itoa(count) + "\n" +
		"- arguments: " + arguments + "\n" +
		"The repeated calls are not making progress. Do not call this tool with " +
		"these exact arguments again. Inspect the latest result and choose a " +
		"different action, different arguments, or finish the task if enough " +
		"evidence has been gathered."
}

// Preview shortens canonical arguments to at most limit UTF-16 code units, as the reference
// does, marking how many were left out: "<head>… (+<n> more chars)". A cut that would split
// a surrogate pair (a character outside the Basic Multilingual Plane) keeps the pair out
// instead, since half of it is not valid text; n counts what was left out.
func Preview(canonical string, limit int) string {
	units := 0
	for _, r := range canonical {
		units += utf16Len(r)
	}
	if units <= limit {
		return canonical
	}
	kept, cut := 0, 0
	for i, r := range canonical {
		n := utf16Len(r)
		if kept+n > limit {
			cut = i
			break
		}
		kept += n
	}
	return canonical[:cut] + "… (+" + strconv.Itoa(units-kept) + " more chars)"
}

func utf16Len(r rune) int {
	if r >= 0x10000 && r <= utf8.MaxRune {
		return 2
	}
	return 1
}

// Reminder is an installed-or-installable repeat-tool reminder with its per-agent chains.
// It is safe for concurrent use.
type Reminder struct {
	thresholds []int // ascending
	include    []string
	exclude    []string
	preview    int

	mu     sync.Mutex
	chains map[weak.Pointer[tool.Scope]]*chain
	// last is the chain advanced last, with its agent's weak key: an agent making call
	// after call (the common case) finds its chain without making a weak pointer or a
	// map lookup. It holds the agent weakly, like the map.
	last struct {
		key   weak.Pointer[tool.Scope]
		chain *chain
	}
}

// chain is one agent's current run of identical tracked calls. A reset chain has count 0.
type chain struct {
	name, args string
	count      int
}

// New validates cfg and returns a reminder with no chains.
func New(cfg Config) (*Reminder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ts := cfg.Thresholds
	if ts == nil {
		ts = defaultThresholds
	}
	ts = slices.Clone(ts)
	slices.Sort(ts)
	preview := cfg.ArgumentsPreviewChars
	if preview == 0 {
		preview = DefaultArgumentsPreviewChars
	}
	return &Reminder{
		thresholds: ts,
		include:    slices.Clone(cfg.Include),
		exclude:    slices.Clone(cfg.Exclude),
		preview:    preview,
		chains:     map[weak.Pointer[tool.Scope]]*chain{},
	}, nil
}

// Install validates cfg and adds a new reminder's post-execute hook to scope. Use New and
// Reminder.Install instead when the agent loop needs the reminder for resets.
func Install(scope *tool.Scope, cfg Config) (undo func(), err error) {
	r, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return r.Install(scope)
}

// Install adds the reminder's post-execute hook to scope (the registry's global scope covers
// every agent). The returned function removes it; the chains are kept. The hook never
// looks at the result, so it registers tool.ReadOnly and costs the call no copy.
func (r *Reminder) Install(scope *tool.Scope) (undo func(), err error) {
	if scope == nil {
		return nil, errors.New("repeat-tool-reminder: Install needs a scope (use reg.Global() for every agent)")
	}
	return scope.OnPostDecision(r.decide, tool.ReadOnly()), nil
}

// PostExecute is the reminder's post-execute hook: it advances the calling agent's chain,
// lets the later hooks decide, and prepends a reminder to their decision's additional
// contexts when the chain reached a threshold.
func (r *Reminder) PostExecute(_ context.Context, exec *tool.Execution, _ *tool.Result, next func() (tool.PostDecision, error)) (tool.PostDecision, error) {
	msg, ok := r.observe(exec)
	d, err := next()
	return r.decided(msg, ok, d, err)
}

// decide is PostExecute as a hook that runs once the later hooks decided d (or failed with
// err): Install registers it with OnPostDecision, which saves the call the closure for next.
// It observes the call after the later hooks instead of before them, which they cannot tell.
func (r *Reminder) decide(_ context.Context, exec *tool.Execution, _ *tool.Result, d tool.PostDecision, err error) (tool.PostDecision, error) {
	msg, ok := r.observe(exec)
	return r.decided(msg, ok, d, err)
}

// decided adds the reminder msg, when ok, to the decision d of the hooks after it.
func (r *Reminder) decided(msg content.Message, ok bool, d tool.PostDecision, err error) (tool.PostDecision, error) {
	if err != nil || !ok {
		return d, err
	}
	d.AdditionalContexts = append([]content.Message{msg}, d.AdditionalContexts...)
	return d, nil
}

// Tracked reports whether calls of the named tool take part in chains.
func (r *Reminder) Tracked(name string) bool {
	if len(r.include) > 0 && !wildcard.Any(r.include, name) {
		return false
	}
	return !wildcard.Any(r.exclude, name)
}

// observe advances exec's agent chain and returns the reminder due, if any.
func (r *Reminder) observe(exec *tool.Execution) (content.Message, bool) {
	agent := exec.Agent()
	if agent == nil || !r.Tracked(exec.Name()) {
		return content.Message{}, false
	}
	var buf [256]byte // the canonical arguments of most calls fit: no allocation for them
	canon, ok := exec.AppendCanonicalArgs(buf[:0])
	if !ok {
		return content.Message{}, false
	}
	name := exec.Name()
	count := r.advance(agent, name, canon)
	if !slices.Contains(r.thresholds, count) {
		return content.Message{}, false
	}
	text := GentleText
	if count != r.thresholds[0] {
		text = DetailedText(name, count, Preview(string(canon), r.preview))
	}
	return content.Message{
		ID:      ids.New("msg_"),
		Role:    content.RoleUser,
		Content: content.Texts(text),
		Source: &content.Source{
			Kind:    "plugin",
			Plugin:  PluginID,
			Form:    "notice",
			Summary: name + " × " + strconv.Itoa(count),
		},
	}, true
}

// advance records one tracked call of agent and returns the chain's new length.
// args is the call's canonical arguments, copied only when they start a new chain.
func (r *Reminder) advance(agent *tool.Scope, name string, args []byte) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.last.chain
	if c == nil || r.last.key.Value() != agent {
		key := weak.Make(agent)
		c = r.chains[key]
		if c == nil {
			c = &chain{}
			r.chains[key] = c
			// Drop the chain with its agent. The cleanup holds only the weak key.
			runtime.AddCleanup(agent, r.drop, key)
		}
		r.last.key, r.last.chain = key, c
	}
	if c.count > 0 && c.name == name && c.args == string(args) {
		c.count++
	} else {
		c.name, c.args, c.count = name, string(args), 1
	}
	return c.count
}

func (r *Reminder) drop(key weak.Pointer[tool.Scope]) {
	r.mu.Lock()
	if r.last.key == key {
		r.last.key, r.last.chain = weak.Pointer[tool.Scope]{}, nil
	}
	delete(r.chains, key)
	r.mu.Unlock()
}

// Reset clears agent's chain: its next tracked call starts a new chain at 1.
func (r *Reminder) Reset(agent *tool.Scope) {
	if agent == nil {
		return
	}
	r.mu.Lock()
	if c := r.chains[weak.Make(agent)]; c != nil {
		*c = chain{}
	}
	r.mu.Unlock()
}

// PreStep is the agent loop's pre-step notification: claimed are the messages the step
// takes from the agent's inbox. When one of them was typed by the user (source kind
// "user"), the agent's chain is reset.
func (r *Reminder) PreStep(agent *tool.Scope, claimed []content.Message) {
	for _, m := range claimed {
		if m.Source != nil && m.Source.Kind == "user" {
			r.Reset(agent)
			return
		}
	}
}

// Count returns the length of agent's current chain (0 when it has none), for diagnostics
// and tests.
func (r *Reminder) Count(agent *tool.Scope) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.chains[weak.Make(agent)]; c != nil {
		return c.count
	}
	return 0
}
