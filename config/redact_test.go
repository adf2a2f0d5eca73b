package config

import (
	"strings"
	"testing"
)

// TestRedact covers the redaction key: on by default, off only from the user's side (file,
// environment), never from a project file, and only with a boolean.
func TestRedact(t *testing.T) {
	c, err := Load(setup(t, "", "", env{}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Redact.On() {
		t.Fatal("redaction is off by default")
	}
	for _, tc := range []struct {
		name, user string
		e          env
		want       bool
		source     string
	}{
		{"user file off", "redact: {enabled: false}\n", env{}, false, "config.yaml:1"},
		{"user file on", "redact:\n  enabled: true\n", env{}, true, "config.yaml:2"},
		{"environment off", "", env{"DSH_REDACT_ENABLED": "false"}, false, "env DSH_REDACT_ENABLED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(setup(t, tc.user, "", tc.e))
			if err != nil {
				t.Fatal(err)
			}
			if c.Redact.On() != tc.want || !strings.Contains(c.Source("redact.enabled").String(), tc.source) {
				t.Errorf("on = %v from %s, want %v from %s", c.Redact.On(), c.Source("redact.enabled"), tc.want, tc.source)
			}
			for _, e := range c.Entries() {
				if e.Key == "redact.enabled" && e.Value != map[bool]string{true: "true", false: "false"}[tc.want] {
					t.Errorf("dsh config shows redact.enabled = %q", e.Value)
				}
			}
		})
	}
	for _, tc := range []struct{ name, user, project, want string }{
		{"project may not turn it off", "", "redact: {enabled: false}\n", `"redact.enabled" may be set only in the user configuration`},
		{"not a boolean", "redact: {enabled: maybe}\n", "", `enabled must be true or false, got "maybe"`},
		{"unknown key", "redact: {enable: false}\n", "", `unknown key "redact.enable"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(setup(t, tc.user, tc.project, env{}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %s", err, tc.want)
			}
		})
	}
}
