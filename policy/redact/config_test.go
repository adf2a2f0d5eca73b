package redact_test

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/dsh-go/dsh/policy/redact"
)

func TestConfigYAML(t *testing.T) {
	for _, tc := range []struct {
		yaml, err string
		on        bool
	}{
		{"{}", "", true},
		{"enabled: true", "", true},
		{"enabled: false", "", false},
		{"enabled: no", `enabled must be true or false, got "no"`, false},
		{"enabled: 0", `enabled must be true or false, got "0"`, false},
		{"enabled: [true]", `enabled must be true or false`, false},
		{"enable: true", `unknown config key "enable" (line 1)`, false},
		{"true", "the redact section must be a mapping", false},
	} {
		var c redact.Config
		err := yaml.Unmarshal([]byte(tc.yaml), &c)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.yaml, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: err = %v, want %q", tc.yaml, err, tc.err)
		case tc.err == "" && c.On() != tc.on:
			t.Errorf("%q: On() = %v", tc.yaml, c.On())
		}
	}
	if !(redact.Config{}).On() {
		t.Error("the zero Config is off")
	}
}
