package config_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-go/dsh/config"
)

// Load layers the user's file, the project's file, the environment and flags, and says
// where each value came from. A project's file may lower maxSteps and add deny rules, but
// not loosen what the user set.
func ExampleLoad() {
	root, err := os.MkdirTemp("", "dsh-config-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	home := filepath.Join(root, ".dsh")
	os.MkdirAll(filepath.Join(root, "project", ".dsh"), 0o755)
	os.MkdirAll(home, 0o755)
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: deepseek-v4-pro\nmaxSteps: 30\npermissions: {deny: [\"bash(rm *)\"]}\n"), 0o644)
	os.WriteFile(filepath.Join(root, "project", ".dsh", "config.yaml"), []byte("maxSteps: 20\npermissions: {deny: [\"bash(curl *)\"]}\n"), 0o644)

	env := map[string]string{"DSH_MODE": "both", "DEEPSEEK_API_KEY": "sk-example"}
	c, err := config.Load(config.Options{
		Home:     home,
		Dir:      filepath.Join(root, "project"),
		UserHome: root,
		Getenv:   func(k string) string { return env[k] },
		Flags:    []config.Setting{{Key: "maxParallelToolCalls", Value: "4", Flag: "--parallel"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range c.Entries()[:11] {
		src := e.Source.String()
		if rel, err := filepath.Rel(root, e.Source.Name); err == nil && e.Source.Kind == config.FromFile {
			src = fmt.Sprintf("%s:%d", rel, e.Source.Line)
		}
		fmt.Printf("%-22s %-30s %s\n", e.Key, e.Value, src)
	}
	// The permission lists accumulate: a project's file adds to the user's deny rules.
	var deny []string
	for _, it := range c.Items("permissions.deny") {
		deny = append(deny, fmt.Sprintf("%q from the %s", it.Value, it.Source.Layer()))
	}
	fmt.Println("permissions.deny:", strings.Join(deny, ", "))
	// Output:
	// model                  deepseek-v4-pro                .dsh/config.yaml:1
	// baseUrl                https://api.deepseek.com       default
	// apiKeyEnv              DEEPSEEK_API_KEY               default
	// apiKey                 (set, 10 characters)           env DEEPSEEK_API_KEY
	// provider               (from baseUrl)                 default
	// thinking               (server default)               default
	// reasoningEffort        (server default)               default
	// mode                   both                           env DSH_MODE
	// codeRuntime            quickjs                        default
	// maxParallelToolCalls   4                              flag --parallel
	// maxSteps               20                             project/.dsh/config.yaml:1
	// permissions.deny: "bash(rm *)" from the user file, "bash(curl *)" from the project file
}
