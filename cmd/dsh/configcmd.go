package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/dsh-go/dsh/jsonv"
)

// runConfig implements "dsh config": the effective configuration and where each value came
// from (defaults < ~/.dsh/config.yaml < ./.dsh/config.yaml < environment < flags). It takes
// every configuration flag, so "dsh config --mode code" shows what "dsh run --mode code"
// would use.
func runConfig(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "config", "config [--json] [--workspace DIR] [configuration flags]")
	asJSON := fs.Bool("json", false, "print the configuration as JSON")
	workspace := fs.String("workspace", e.cwd, "the workspace whose .dsh/config.yaml applies")
	cf := addConfigFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	ws, err := workspaceDir(*workspace)
	if err != nil {
		return err
	}
	c, err := loadConfig(e, ws, cf)
	if err != nil {
		return err
	}
	if *asJSON {
		files := make([]any, len(c.files))
		for i, f := range c.files {
			files[i] = jsonv.NewObject(jsonv.Member{Name: "path", Value: f.path}, jsonv.Member{Name: "exists", Value: f.exists})
		}
		vals := make([]any, len(c.values))
		for i, v := range c.values {
			vals[i] = jsonv.NewObject(
				jsonv.Member{Name: "key", Value: v.key},
				jsonv.Member{Name: "value", Value: v.jsonValue()},
				jsonv.Member{Name: "source", Value: v.source},
			)
		}
		b, err := jsonv.MarshalIndent(jsonv.NewObject(
			jsonv.Member{Name: "home", Value: c.home},
			jsonv.Member{Name: "files", Value: files},
			jsonv.Member{Name: "values", Value: vals},
		), "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s\n", b)
		return nil
	}
	fmt.Fprintln(e.stdout, "# precedence: defaults < user file < project file < environment < flags")
	for _, f := range c.files {
		state := "absent"
		if f.exists {
			state = "loaded"
		}
		fmt.Fprintf(e.stdout, "# %s (%s)\n", f.path, state)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, v := range c.values {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", v.key, v.display(), v.source)
	}
	return tw.Flush()
}
