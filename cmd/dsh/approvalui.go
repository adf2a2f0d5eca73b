package main

import (
	"flag"
	"os"

	"github.com/dsh-go/dsh/agent"
	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/tool"
)

// approvalFlag registers --approval, the approval preset of a command that runs tools.
func approvalFlag(fs *flag.FlagSet) *string {
	return fs.String("approval", "", "approval preset: read-only (ask before anything but reading), auto-edit (file edits run, commands ask) or full-auto (nothing asks; deny rules still refuse)")
}

// checkApproval validates an --approval value as a usage error.
func checkApproval(preset string) error {
	if err := approval.ValidatePreset(preset); err != nil {
		return &usageError{"--approval: " + err.Error()}
	}
	return nil
}

// terminalPrompter returns the interactive approval prompter on standard input and the
// terminal f (standard error) when both are terminals, nil otherwise. Its "save" answer
// adds an allow rule to the user's configuration file.
func terminalPrompter(e *env, c *loadedConfig, f *os.File) approval.Prompter {
	if e.stdin == nil || f == nil {
		return nil
	}
	p := approval.ForStdio(e.stdin, f)
	if t, ok := p.(*approval.Terminal); ok {
		t.Renderer = term.For(f, e.getenv)
		if c != nil && c.user != "" {
			path := c.user
			t.Save = func(rule string) (string, error) { return path, approval.AddAllowRule(path, rule) }
		}
	}
	return p
}

// callCards returns the pending card of a call for approval questions.
func callCards(reg *tool.Registry) func(a *tool.Scope, name string, args any) *card.Call {
	return func(a *tool.Scope, name string, args any) *card.Call {
		c := agent.CallCard(reg.Get(name, a), name, args)
		return &c
	}
}
