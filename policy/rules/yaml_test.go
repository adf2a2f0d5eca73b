package rules_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/dsh-go/dsh/policy/rules"
)

func TestYAML(t *testing.T) {
	in := `
allow: [read, "bash(git status*)"]
ask:
  - "bash(git push*)"
deny: ["read(**/.env)"]
workspace: /ws
`
	var got rules.Config
	if err := yaml.Unmarshal([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	want := rules.Config{Allow: []string{"read", "bash(git status*)"}, Ask: []string{"bash(git push*)"}, Deny: []string{"read(**/.env)"}, Workspace: "/ws"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var bad rules.Config
	if err := yaml.Unmarshal([]byte("allow: [read]\ndenny: [bash]\n"), &bad); err == nil || err.Error() != `rules: unknown config key "denny" (line 2)` {
		t.Errorf("misspelt key: %v", err)
	}
	if err := yaml.Unmarshal([]byte("allow: read"), &bad); err == nil {
		t.Error("a string for a list was accepted")
	}
}
