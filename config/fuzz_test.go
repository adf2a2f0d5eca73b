package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary text to Load as the user's file: it must return a configuration
// or an error naming the file, never panic, and a successful load must be well formed.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		"",
		"model: x\n",
		"maxParallelToolCalls: 1.5\n",
		"mode: code\ntoolOrder: [run_code, \"<unlisted-tools>\"]\n",
		"permissions: {allow: [read], deny: [\"bash(rm *)\"]}\n",
		"reminder: {thresholds: [2, 2]}\n",
		"mcp:\n  servers:\n    a: {command: x, reconnect: {maxAttempts: 0}}\n",
		"a: &x [1]\nb: *x\n",
		"- not a mapping\n",
		"sessions: {root: ~, compression: none}\nspill: {maxInlineBytes: 0}\n",
		"\t: bad indentation",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		home := t.TempDir()
		path := filepath.Join(home, "config.yaml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(Options{Home: home, Dir: t.TempDir(), UserHome: home, Getenv: func(string) string { return "" }})
		if err != nil {
			if !strings.HasPrefix(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if c.MaxParallelToolCalls < 1 || c.MaxSteps < 1 || !c.Mode.Valid() || c.Model == "" {
			t.Fatalf("loaded an invalid configuration: %+v", c)
		}
		if err := c.Reminder.Validate(); err != nil {
			t.Fatalf("loaded an invalid reminder configuration: %v", err)
		}
		for name, s := range c.MCP.Servers {
			if err := s.Validate(name); err != nil {
				t.Fatalf("loaded an invalid server: %v", err)
			}
		}
		_ = c.Entries()
	})
}
