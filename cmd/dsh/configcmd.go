package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/dsh-go/dsh/config"
	"github.com/dsh-go/dsh/internal/projectdoc"
	"github.com/dsh-go/dsh/jsonv"
)

// runConfig implements "dsh config": the effective configuration and where each value came
// from (defaults < ~/.dsh/config.yaml < ./.dsh/config.yaml < environment < flags). The
// permission lists accumulate across the layers, so each of their entries is shown with
// its own source. It takes every configuration flag, so "dsh config --mode code" shows
// what "dsh run --mode code" would use, and the project instruction files (AGENTS.md) a
// session there would load. The API key itself is never printed, only whether it is set.
func runConfig(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "config", "config [--json] [--workspace DIR] [configuration flags]")
	asJSON := fs.Bool("json", false, "print the configuration as JSON")
	workspace := fs.String("workspace", e.cwd, "the workspace whose .dsh/config.yaml applies")
	cf := addConfigFlags(fs)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	ws, c, err := workspaceConfig(e, *workspace, cf)
	if err != nil {
		return err
	}
	files := []string{c.user, c.project}
	doc, err := projectdoc.Load(ws, 0)
	if err != nil {
		return err
	}
	if *asJSON {
		fl := make([]any, len(files))
		for i, f := range files {
			fl[i] = jsonv.NewObject(jsonv.Member{Name: "path", Value: f}, jsonv.Member{Name: "exists", Value: exists(f)})
		}
		var vals []any
		for _, en := range c.Entries() {
			members := []jsonv.Member{
				{Name: "key", Value: en.Key},
				{Name: "value", Value: en.Value},
				{Name: "source", Value: en.Source.String()},
				{Name: "layer", Value: en.Source.Layer()},
			}
			if en.Items != nil {
				items := make([]any, len(en.Items))
				for i, it := range en.Items {
					items[i] = jsonv.NewObject(
						jsonv.Member{Name: "value", Value: it.Value},
						jsonv.Member{Name: "source", Value: it.Source.String()},
						jsonv.Member{Name: "layer", Value: it.Source.Layer()},
					)
				}
				members = append(members, jsonv.Member{Name: "entries", Value: items})
			}
			vals = append(vals, jsonv.NewObject(members...))
		}
		instr := make([]any, len(doc.Files))
		for i, f := range doc.Files {
			instr[i] = jsonv.NewObject(
				jsonv.Member{Name: "path", Value: f.Path},
				jsonv.Member{Name: "bytes", Value: float64(f.Size)},
				jsonv.Member{Name: "usedBytes", Value: float64(f.Used)},
			)
		}
		b, err := jsonv.MarshalIndent(jsonv.NewObject(
			jsonv.Member{Name: "home", Value: c.home},
			jsonv.Member{Name: "files", Value: fl},
			jsonv.Member{Name: "instructions", Value: instr},
			jsonv.Member{Name: "values", Value: vals},
		), "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s\n", b)
		return nil
	}
	fmt.Fprintln(e.stdout, "# precedence: defaults < user file < project file < environment < flags")
	fmt.Fprintln(e.stdout, "# permission lists accumulate in that order; a project file may only add to deny and ask")
	for _, f := range files {
		state := "absent"
		if exists(f) {
			state = "loaded"
		}
		fmt.Fprintf(e.stdout, "# %s (%s)\n", f, state)
	}
	if len(doc.Files) == 0 {
		fmt.Fprintf(e.stdout, "# project instructions: no %s from %s down to %s\n", projectdoc.FileName, doc.Root, ws)
	}
	for _, f := range doc.Files {
		state := fmt.Sprintf("%d bytes", f.Size)
		switch {
		case f.Used == 0:
			state += ", left out: over the budget"
		case f.Truncated():
			state += fmt.Sprintf(", cut to %d: over the budget", f.Used)
		}
		fmt.Fprintf(e.stdout, "# project instructions: %s (%s)\n", f.Path, state)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, en := range c.Entries() {
		if len(en.Items) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", en.Key, en.Value, describe(en.Source))
			continue
		}
		for _, it := range en.Items { // one row per entry, in the order the rules see them
			fmt.Fprintf(tw, "%s\t%s\t%s\n", en.Key, strconv.Quote(it.Value), describe(it.Source))
		}
	}
	return tw.Flush()
}

// describe renders a source with its layer: "default", "env DSH_MODEL", "flag --deny",
// "user file /home/me/.dsh/config.yaml:3" or "project file /work/x/.dsh/config.yaml:7".
func describe(s config.Source) string {
	if s.Kind == config.FromFile {
		return s.Layer() + " " + s.String()
	}
	return s.String()
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
