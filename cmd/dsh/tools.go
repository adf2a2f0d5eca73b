package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dsh-go/dsh/codemode"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/tool"
)

// runTools implements "dsh tools": what the model would see, including the tools of the
// configured MCP servers (started for it). In native mode that is every tool's schema; in code mode only run_code plus the SDK its programs are written against;
// in both mode all of it.
func runTools(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "tools", "tools [--json] [--mode native|code|both] [--workspace DIR]")
	asJSON := fs.Bool("json", false, "print the model-visible schemas as JSON")
	workspace := fs.String("workspace", e.cwd, "the workspace the file and shell tools are confined to")
	cf := addConfigFlags(fs, "mode")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	ws, c, err := workspaceConfig(e, *workspace, cf)
	if err != nil {
		return err
	}
	m := c.Mode
	rt, err := newRuntime(ctx, runtimeConfig{Workspace: ws, Mode: m, Config: c.Config, MCPLog: homeMCPLog(c),
		MCPDepth: mcp.Depth(e.getenv), Stderr: e.stderr})
	if err != nil {
		return err
	}
	defer rt.Close()
	schemas, _, err := rt.reg.WireTools(nil)
	if err != nil {
		return err
	}
	if *asJSON {
		return printSchemasJSON(e.stdout, schemas)
	}
	if err := printSchemasTable(e.stdout, rt.reg, schemas); err != nil {
		return err
	}
	if m != tool.ModeNative {
		sdk, err := codemode.SDKSection(rt.reg, nil)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "\nThe SDK run_code programs are written against:\n\n%s\n", strings.TrimRight(sdk, "\n"))
	}
	return nil
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
		desc := oneLine(s.Description)
		if r := []rune(desc); len(r) > 80 {
			desc = string(r[:77]) + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, class, timeout, desc)
	}
	return tw.Flush()
}
