package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/dsh-go/dsh/jsonv"
)

// runConfig implements "dsh config": the effective configuration and where each value came
// from (defaults < ~/.dsh/config.yaml < ./.dsh/config.yaml < environment < flags). It takes
// every configuration flag, so "dsh config --mode code" shows what "dsh run --mode code"
// would use. The API key itself is never printed, only whether it is set.
func runConfig(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "config", "config [--json] [--workspace DIR] [configuration flags]")
	asJSON := fs.Bool("json", false, "print the configuration as JSON")
	workspace := fs.String("workspace", e.cwd, "the workspace whose .dsh/config.yaml applies")
	cf := addConfigFlags(fs)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	_, c, err := workspaceConfig(e, *workspace, cf)
	if err != nil {
		return err
	}
	files := []string{c.user, c.project}
	if *asJSON {
		fl := make([]any, len(files))
		for i, f := range files {
			fl[i] = jsonv.NewObject(jsonv.Member{Name: "path", Value: f}, jsonv.Member{Name: "exists", Value: exists(f)})
		}
		var vals []any
		for _, en := range c.Entries() {
			vals = append(vals, jsonv.NewObject(
				jsonv.Member{Name: "key", Value: en.Key},
				jsonv.Member{Name: "value", Value: en.Value},
				jsonv.Member{Name: "source", Value: en.Source.String()},
			))
		}
		b, err := jsonv.MarshalIndent(jsonv.NewObject(
			jsonv.Member{Name: "home", Value: c.home},
			jsonv.Member{Name: "files", Value: fl},
			jsonv.Member{Name: "values", Value: vals},
		), "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s\n", b)
		return nil
	}
	fmt.Fprintln(e.stdout, "# precedence: defaults < user file < project file < environment < flags")
	for _, f := range files {
		state := "absent"
		if exists(f) {
			state = "loaded"
		}
		fmt.Fprintf(e.stdout, "# %s (%s)\n", f, state)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, en := range c.Entries() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", en.Key, en.Value, en.Source)
	}
	return tw.Flush()
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
