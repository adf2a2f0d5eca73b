package main

import (
	"strings"
	"testing"
)

// A command that exits non-zero used to be drawn "✓ bash · exit 3" and "dsh call" exited 0.
func TestCallCommandFailureExitStatus(t *testing.T) {
	tests := []struct {
		name, command string
		code          int
		head, stderr  string
	}{
		{"exit 3", "echo out; exit 3", 1, "✗ bash · exit 3", "call 1 (bash): the command exited with status 3"},
		{"killed", "kill -TERM $$", 1, "✗ bash · killed by SIGTERM", "the command was killed by SIGTERM"},
		{"success", "echo fine", 0, "✓ bash · exit 0", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t)
			s.write("x", "x\n")
			r := s.dsh("call", "bash", `{"command":"`+tt.command+`","description":"d"}`, "read", `{"file_path":"x"}`).want(t, tt.code)
			mustContain(t, "stdout", r.stdout, tt.head+"\n")
			mustContain(t, "stderr", r.stderr, tt.stderr)
			if tt.code != 0 && strings.Contains(r.stdout, "● Read") {
				t.Errorf("the call after the failed command ran:\n%s", r.stdout)
			}
			j := s.dsh("call", "--json", "bash", `{"command":"`+tt.command+`","description":"d"}`).want(t, tt.code)
			if !strings.Contains(j.stdout, `"isError":false`) {
				t.Errorf("the result for a model is not a success: %s", j.stdout)
			}
		})
	}
}
