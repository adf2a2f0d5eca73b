package rules

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/policy/internal/wildcard"
	"github.com/dsh-go/dsh/tool"
)

// Config holds the permission rules.
type Config struct {
	// Allow lists the patterns of pre-approved calls.
	Allow []string `yaml:"allow"`
	// Ask lists the patterns of calls that need approval.
	Ask []string `yaml:"ask"`
	// Deny lists the patterns of refused calls.
	Deny []string `yaml:"deny"`
	// Workspace is the directory relative path patterns and relative paths in arguments
	// are resolved against; empty means the working directory when the rules are created.
	Workspace string `yaml:"workspace"`
}

// Validate parses every pattern and reports the first error, naming the list and index.
func (c Config) Validate() error {
	_, err := c.compile()
	return err
}

type compiled struct{ allow, ask, deny []Pattern }

func (c Config) compile() (compiled, error) {
	var out compiled
	for _, l := range []struct {
		name string
		in   []string
		out  *[]Pattern
	}{{"deny", c.Deny, &out.deny}, {"ask", c.Ask, &out.ask}, {"allow", c.Allow, &out.allow}} {
		for i, s := range l.in {
			p, err := ParsePattern(s)
			if err != nil {
				return compiled{}, fmt.Errorf("%w (%s[%d])", err, l.name, i)
			}
			*l.out = append(*l.out, p)
		}
	}
	return out, nil
}

// UnmarshalYAML decodes the rules, rejecting unknown keys (a misspelt "deny" must not
// silently drop the rules under it).
func (c *Config) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(node.Content); i += 2 {
			if k := node.Content[i].Value; !slices.Contains([]string{"allow", "ask", "deny", "workspace"}, k) {
				return fmt.Errorf("rules: unknown config key %q (line %d)", k, node.Content[i].Line)
			}
		}
	}
	type plain Config
	var p plain
	if err := node.Decode(&p); err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	*c = Config(p)
	return nil
}

// Kind is what a verdict decides.
type Kind int

// Verdicts, in increasing precedence after NoOpinion.
const (
	NoOpinion Kind = iota // no rule matches
	Allowed               // an allow rule pre-approves the call
	Asked                 // an ask rule wants approval
	Denied                // a deny rule refuses the call
)

// String returns "none", "allow", "ask" or "deny".
func (k Kind) String() string {
	switch k {
	case Allowed:
		return "allow"
	case Asked:
		return "ask"
	case Denied:
		return "deny"
	default:
		return "none"
	}
}

// Verdict is the rules' decision for one call.
type Verdict struct {
	Kind Kind
	Rule string // the deciding pattern as written; "" for NoOpinion
	// Unresolved says why the command could not be checked statically, when that is what
	// made the rule match (a deny or ask rule counts as matching what cannot be seen).
	Unresolved string
}

// Reason returns the message the model reads for a deny or ask verdict ("" otherwise).
func (v Verdict) Reason(name string) string {
	var s string
	switch v.Kind {
	case Denied:
		s = fmt.Sprintf("tool %q is denied by permission rule %q", name, v.Rule)
	case Asked:
		s = fmt.Sprintf("tool %q requires approval by permission rule %q", name, v.Rule)
	default:
		return ""
	}
	if v.Unresolved != "" {
		s += fmt.Sprintf(": the command cannot be checked before it runs (%s), so the rule is taken to match", v.Unresolved)
	}
	return s
}

// Rules is a compiled rule set. Its rules never change; it remembers the analyses of
// recent commands, and is safe for concurrent use.
type Rules struct {
	c         compiled
	workspace string
	commands  *commandCache
}

// New validates cfg and compiles its rules.
func New(cfg Config) (*Rules, error) {
	c, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	ws := cfg.Workspace
	if ws == "" {
		if ws, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("rules: no workspace given and the working directory is unknown: %w", err)
		}
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return nil, fmt.Errorf("rules: workspace %q: %w", cfg.Workspace, err)
	}
	return &Rules{c: c, workspace: filepath.Clean(ws), commands: newCommandCache()}, nil
}

// Workspace returns the absolute directory relative paths are resolved against.
func (r *Rules) Workspace() string { return r.workspace }

// Install validates cfg and installs its rules on scope; see Rules.Install.
func Install(scope *tool.Scope, cfg Config) (undo func(), err error) {
	r, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return r.Install(scope)
}

// Install adds the rules to scope (the registry's global scope covers every call): a
// pre-execute hook in front of the hooks already there, and a guard that enforces the deny
// rules after every hook and approval. The returned function removes both.
func (r *Rules) Install(scope *tool.Scope) (undo func(), err error) {
	if scope == nil {
		return nil, errors.New("rules: Install needs a scope (use reg.Global() for every call)")
	}
	removePre := scope.OnPreCheck(r.Check, tool.Prepend())
	removeGuard := scope.GuardCoded(r.Guard)
	return func() {
		removeGuard()
		removePre()
	}, nil
}

// PreExecute is the rules' pre-execute hook: deny refuses the call at once; ask and allow
// let the later hooks speak first, and a deny of theirs stands; allow turns their ask into
// allow; with no matching rule the later hooks decide.
func (r *Rules) PreExecute(_ context.Context, exec *tool.Execution, next func() (tool.PreDecision, error)) (tool.PreDecision, error) {
	v := r.evaluate(&call{r: r, name: exec.Name(), exec: exec})
	switch v.Kind {
	case Denied:
		return tool.DenyWith(v.Reason(exec.Name()), tool.Info{Name: NameDenied, Code: CodeDenied}), nil
	case Asked, Allowed:
		d, err := next()
		if err != nil || d.Kind == tool.PreDeny {
			return d, err
		}
		if v.Kind == Asked {
			return tool.Ask(v.Reason(exec.Name())), nil
		}
		return tool.Allow(), nil
	default:
		return next()
	}
}

// Check is the rules' pre-execute hook in the form Install registers (tool.PreCheckFunc):
// the verdict PreExecute gives, without a closure for next per call. A deny rule refuses
// the call at once; an ask or allow rule decides unless a later hook denies or fails; with
// no matching rule the later hooks decide.
func (r *Rules) Check(_ context.Context, exec *tool.Execution) (tool.PreDecision, bool, error) {
	v := r.evaluate(&call{r: r, name: exec.Name(), exec: exec})
	switch v.Kind {
	case Denied:
		return tool.DenyWith(v.Reason(exec.Name()), tool.Info{Name: NameDenied, Code: CodeDenied}), true, nil
	case Asked:
		return tool.Ask(v.Reason(exec.Name())), true, nil
	case Allowed:
		return tool.Allow(), true, nil
	default:
		return tool.PreDecision{}, false, nil
	}
}

// The error info of a call a deny rule refused, so that a caller, a log reader or a test can
// tell the rules' refusals from other failures.
const (
	CodeDenied = "PERMISSION_DENIED"
	NameDenied = "PermissionDeniedError"
)

// Guard is the rules' guard: it returns the deny reason, with code CodeDenied, when a deny rule
// matches the call.
func (r *Rules) Guard(exec *tool.Execution) (string, *tool.Info) {
	c := call{r: r, name: exec.Name(), exec: exec}
	if p, why := c.firstMatch(r.c.deny); p != nil {
		info := tool.Info{Name: NameDenied, Code: CodeDenied}
		return Verdict{Kind: Denied, Rule: p.raw, Unresolved: why}.Reason(exec.Name()), &info
	}
	return "", nil
}

// Evaluate returns the rules' verdict for a call of the named tool with args (a jsonv
// value).
func (r *Rules) Evaluate(name string, args any) Verdict {
	return r.evaluate(&call{r: r, name: name, args: args})
}

func (r *Rules) evaluate(c *call) Verdict {
	if p, why := c.firstMatch(r.c.deny); p != nil {
		return Verdict{Kind: Denied, Rule: p.raw, Unresolved: why}
	}
	if p, why := c.firstMatch(r.c.ask); p != nil {
		return Verdict{Kind: Asked, Rule: p.raw, Unresolved: why}
	}
	if p := c.allowed(); p != nil {
		return Verdict{Kind: Allowed, Rule: p.raw}
	}
	return Verdict{}
}

// call is one call being judged, with its primary argument analysed on first use and shared
// by the deny, ask and allow lists.
type call struct {
	r        *Rules
	name     string
	args     any
	exec     *tool.Execution // where args come from, on first use, when set
	analysed bool
	arg      Argument
	whole    string    // KindCommand: the normalized command
	cmd      *analysis // KindCommand: what it runs
	path     pathValue // KindPath: the resolved path
}

func (c *call) analyse() {
	if c.analysed {
		return
	}
	c.analysed = true
	if c.exec != nil {
		// Only a rule naming the tool with an argument pattern reads the arguments: a
		// call no such rule names costs no copy of them.
		c.args, _ = c.exec.Args()
	}
	c.arg = PrimaryArgument(c.name, c.args)
	switch c.arg.Kind {
	case KindCommand:
		c.whole, c.cmd = normalizeSpace(c.arg.Value), c.r.commands.analyse(c.arg.Value)
	case KindPath:
		c.path = resolvePath(c.r.workspace, c.arg.Value)
	}
}

// firstMatch returns the first pattern of a deny or ask list matching the call: a command
// pattern matches the whole command or any form of any simple command in it, and every
// command pattern matches a command that cannot be resolved statically (the second result
// then says why).
func (c *call) firstMatch(list []Pattern) (*Pattern, string) {
	for i := range list {
		p := &list[i]
		if !wildcard.Match(p.tool, c.name) {
			continue
		}
		if !p.hasArg {
			return p, ""
		}
		c.analyse()
		switch c.arg.Kind {
		case KindCommand:
			if wildcard.Match(p.cmd, c.whole) {
				return p, ""
			}
			for j := range c.cmd.pieces {
				if c.cmd.pieces[j].matchedBy(p.cmd) {
					return p, ""
				}
			}
		case KindPath:
			if p.path.match(c.path) {
				return p, ""
			}
		default:
			if wildcard.Match(p.arg, c.arg.Value) {
				return p, ""
			}
		}
	}
	if c.analysed && c.arg.Kind == KindCommand && c.cmd.unresolved != "" {
		// What cannot be seen may run any program: the first command rule counts.
		for i := range list {
			if p := &list[i]; p.hasArg && wildcard.Match(p.tool, c.name) {
				return p, c.cmd.unresolved
			}
		}
	}
	return nil, ""
}

// matchedBy reports whether a deny or ask command pattern matches this form of a simple
// command: as written, unquoted, or with the program's directory removed; for the command
// of xargs, also with any arguments appended.
func (pc *piece) matchedBy(pat string) bool {
	for _, s := range [...]string{pc.text, pc.unquoted, pc.base} {
		if s == "" {
			continue
		}
		if wildcard.Match(pat, s) || pc.open && completes(pat, s+" ") {
			return true
		}
	}
	return false
}

// completes reports whether some text starting with prefix matches pat.
func completes(pat, prefix string) bool {
	for k := 0; k <= len(pat); k++ {
		if wildcard.Match(pat[:k], prefix) {
			return true
		}
	}
	return false
}

// allowed returns the allow pattern that pre-approves the call, or nil. For a command every
// program it runs must be allowed and all of it must be resolvable (see the package
// documentation); the pattern returned is the one allowing the first program.
func (c *call) allowed() *Pattern {
	list := c.r.c.allow
	withArg := false
	for i := range list {
		p := &list[i]
		if !wildcard.Match(p.tool, c.name) {
			continue
		}
		if !p.hasArg {
			return p
		}
		withArg = true
	}
	if !withArg {
		return nil
	}
	c.analyse()
	if c.arg.Kind == KindCommand {
		if c.cmd.unresolved != "" {
			return nil
		}
		for i := range list {
			p := &list[i]
			if p.hasArg && wildcard.Match(p.tool, c.name) && !wildcard.HasWildcard(p.cmd) && p.cmd == c.whole {
				return p
			}
		}
		var first *Pattern
		for j := range c.cmd.pieces {
			pc := &c.cmd.pieces[j]
			if !pc.inner {
				continue // a wrapper: the command it runs is judged instead
			}
			p := allowPiece(list, c.name, pc)
			if p == nil {
				return nil
			}
			if first == nil {
				first = p
			}
		}
		return first
	}
	for i := range list {
		p := &list[i]
		if !p.hasArg || !wildcard.Match(p.tool, c.name) {
			continue
		}
		if c.arg.Kind == KindPath && p.path.match(c.path) || c.arg.Kind == KindText && wildcard.Match(p.arg, c.arg.Value) {
			return p
		}
	}
	return nil
}

// allowPiece returns the first allow pattern allowing one program a command runs: as
// written or unquoted (a program's directory is kept: allowing "ls" does not allow
// "/tmp/x/ls"). A command writing to a file needs a pattern with ">"; the command of xargs,
// whose arguments come at run time, one ending in "*".
func allowPiece(list []Pattern, name string, pc *piece) *Pattern {
	for i := range list {
		p := &list[i]
		if !p.hasArg || !wildcard.Match(p.tool, name) {
			continue
		}
		if pc.redirect && !strings.Contains(p.cmd, ">") {
			continue
		}
		if pc.open {
			// "P*" matching the command and a space matches it with any arguments appended.
			if strings.HasSuffix(p.cmd, "*") && (wildcard.Match(p.cmd, pc.text+" ") || wildcard.Match(p.cmd, pc.unquoted+" ")) {
				return p
			}
			continue
		}
		if wildcard.Match(p.cmd, pc.text) || wildcard.Match(p.cmd, pc.unquoted) {
			return p
		}
	}
	return nil
}

// ArgumentKind says how an argument pattern is matched.
type ArgumentKind int

// Argument kinds.
const (
	KindText    ArgumentKind = iota // a text pattern
	KindCommand                     // a command pattern
	KindPath                        // a path pattern
)

// Argument is a call's primary argument: the value argument patterns are matched against.
type Argument struct {
	Name  string       // the argument's name ("command", "file_path", …), or "arguments" for the canonical JSON
	Kind  ArgumentKind // how patterns match it
	Value string
}

// primaries maps the built-in tools to their primary argument.
var primaries = map[string]struct {
	name     string
	kind     ArgumentKind
	optional bool // absent means the workspace root
}{
	"bash":               {"command", KindCommand, false},
	"pwsh":               {"command", KindCommand, false},
	"read":               {"file_path", KindPath, false},
	"read_image":         {"file_path", KindPath, false},
	"write":              {"file_path", KindPath, false},
	"edit":               {"file_path", KindPath, false},
	"str_replace_editor": {"path", KindPath, false},
	"glob":               {"path", KindPath, true},
	"grep":               {"path", KindPath, true},
	"web_fetch":          {"url", KindText, false},
}

// PrimaryArgument returns the primary argument of a call of the named tool with args (see
// the table in the package documentation).
func PrimaryArgument(name string, args any) Argument {
	if pr, ok := primaries[name]; ok {
		if o, ok := args.(*jsonv.Object); ok {
			v, present := o.Get(pr.name)
			if s, isStr := v.(string); isStr {
				return Argument{Name: pr.name, Kind: pr.kind, Value: s}
			}
			if (!present || v == nil) && pr.optional {
				return Argument{Name: pr.name, Kind: pr.kind, Value: ""}
			}
		}
	}
	canon, err := jsonv.Canonical(args)
	if err != nil {
		canon = nil
	}
	return Argument{Name: "arguments", Kind: KindText, Value: string(canon)}
}
