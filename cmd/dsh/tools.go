package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// runTools implements "dsh tools": what the model would see.
func runTools(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	asJSON := fs.Bool("json", false, "print the model-visible schemas as JSON")
	mode := fs.String("mode", "native", "presentation mode: native, code or both")
	workspace := fs.String("workspace", e.cwd, "the workspace the file and shell tools are confined to")
	if err := fs.Parse(args); err != nil {
		return &usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	m := tool.Mode(*mode)
	if !m.Valid() {
		return &usageError{fmt.Sprintf("--mode must be native, code or both, got %q", *mode)}
	}
	rt, err := newRuntime(runtimeConfig{Workspace: *workspace, Mode: m})
	if err != nil {
		return err
	}
	defer rt.Close()
	schemas, err := rt.reg.Schemas(nil)
	if err != nil {
		return err
	}
	if m == tool.ModeCode {
		// The model is offered run_code only; every other tool is reached from a program.
		schemas = filterSchemas(schemas, tool.RunCodeName)
	}
	if *asJSON {
		return printSchemasJSON(e.stdout, schemas)
	}
	return printSchemasTable(e.stdout, rt.reg, schemas)
}

func filterSchemas(in []tool.Schema, keep string) []tool.Schema {
	var out []tool.Schema
	for _, s := range in {
		if s.Name == keep {
			out = append(out, s)
		}
	}
	return out
}

func printSchemasJSON(w io.Writer, schemas []tool.Schema) error {
	arr := make([]any, len(schemas))
	for i, s := range schemas {
		arr[i] = jsonv.NewObject(
			jsonv.Member{Name: "name", Value: s.Name},
			jsonv.Member{Name: "description", Value: s.Description},
			jsonv.Member{Name: "parameters", Value: s.Parameters},
		)
	}
	b, err := jsonv.MarshalIndent(arr, "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func printSchemasTable(w io.Writer, reg *tool.Registry, schemas []tool.Schema) error {
	if len(schemas) == 0 {
		_, err := fmt.Fprintln(w, "no tools are registered")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tCLASS\tTIMEOUT\tDESCRIPTION")
	for _, s := range schemas {
		def := reg.Get(s.Name, nil)
		class, timeout := "exclusive", "-"
		if def != nil && def.ConcurrencySafe != nil {
			class = "parallel"
		}
		if def != nil && def.Timeout > 0 {
			timeout = def.Timeout.String()
		}
		desc, _, _ := strings.Cut(s.Description, "\n")
		if len(desc) > 80 {
			desc = desc[:77] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, class, timeout, desc)
	}
	return tw.Flush()
}
