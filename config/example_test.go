package config_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/dsh-go/dsh/config"
)

// Load layers the user's file, the project's file, the environment and flags, and says
// where each value came from.
func ExampleLoad() {
	root, err := os.MkdirTemp("", "dsh-config-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	home := filepath.Join(root, ".dsh")
	os.MkdirAll(filepath.Join(root, "project", ".dsh"), 0o755)
	os.MkdirAll(home, 0o755)
	os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model: deepseek-v4-pro\nthinking: disabled\nmaxSteps: 30\n"), 0o644)
	os.WriteFile(filepath.Join(root, "project", ".dsh", "config.yaml"), []byte("maxSteps: 80\n"), 0o644)

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
	// Output:
	// model                  deepseek-v4-pro                .dsh/config.yaml:1
	// baseUrl                https://api.deepseek.com       default
	// apiKeyEnv              DEEPSEEK_API_KEY               default
	// apiKey                 (set, 10 characters)           env DEEPSEEK_API_KEY
	// provider               (from baseUrl)                 default
	// thinking               disabled                       .dsh/config.yaml:2
	// reasoningEffort        (server default)               default
	// mode                   both                           env DSH_MODE
	// codeRuntime            quickjs                        default
	// maxParallelToolCalls   4                              flag --parallel
	// maxSteps               80                             project/.dsh/config.yaml:1
}
