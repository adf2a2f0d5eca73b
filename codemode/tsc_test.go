package codemode_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/dsh/codemode"
)

// tscPath finds the TypeScript compiler installed by scripts/npm-deps.sh (or named by
// DSH_TSC). The type-check is part of the contract of the generated SDK, so a missing
// compiler fails the test rather than skipping it.
func tscPath(tb testing.TB) (node, tsc string) {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		tb.Fatal("node is not installed; run scripts/npm-deps.sh (it installs nodejs, npm and the TypeScript compiler)")
	}
	if p := os.Getenv("DSH_TSC"); p != "" {
		return node, p
	}
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("module root not found")
		}
		dir = parent
	}
	tsc = filepath.Join(dir, ".ci", "node_modules", "typescript", "bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		tb.Fatalf("the TypeScript compiler is not installed at %s: run scripts/npm-deps.sh", tsc)
	}
	return node, tsc
}

// sdkDeclarations extracts the ```ts block of an SDK section.
func sdkDeclarations(tb testing.TB, section string) string {
	tb.Helper()
	_, after, ok := strings.Cut(section, "\n```ts\n")
	decl, _, ok2 := strings.Cut(after, "\n```")
	if !ok || !ok2 {
		tb.Fatalf("no ts block in\n%s", section)
	}
	return decl
}

// tsSample is a program body and the TypeScript errors it must produce (none for a
// correct program).
type tsSample struct {
	name  string
	body  string
	codes []string // the distinct error codes expected, sorted
}

var tsSamples = []tsSample{
	// Correct programs.
	{name: "read_and_return", body: `
const r = await tools.read({ file_path: "a.txt", limit: 10 });
const n: number = r.totalLines;
console.log(r.content.toUpperCase(), n, r.truncated);
return { lines: n };`},
	{name: "exotic_names", body: `
const v = await tools["my-tool"]({ mode: "fast", extra: [1, "x", null, { deep: true }] });
const s: string | null = v;
const p: boolean = await tools["__proto__"]({});
const c = await tools["class"]({});
const total = c.reduce<number>((acc, x) => acc + (typeof x === "number" ? x : x.length), 0);
const u = await tools["路径"]({ "深度": 2 });
return [s, p, total, u];`},
	{name: "parallel_and_errors", body: `
const [a, b] = await Promise.all([
  tools.grep({ pattern: "TODO" }),
  tools.grep({ pattern: "FIXME", paths: ["src"], ignore_case: true }),
]);
try {
  const w = await tools.write({ path: "out.txt", content: String(a.matches.length + b.matches.length), meta: { by: "run_code" } });
  console.log(w.bytes, w.created ?? "existing file");
} catch (e) {
  if (e instanceof ToolCallError) {
    const name: ToolName = e.toolName;
    console.error(name, e.message, e.name === "ToolCallError");
  } else {
    throw e;
  }
}
for (const m of a.matches) console.log(` + "`${m.path}:${m.line}: ${m.text}`" + `);`},
	{name: "nested_and_unions", body: `
const byId = await tools.mcp__srv__lookup({ query: { id: 7 }, fields: ["title", "tags"] });
const byName = await tools.mcp__srv__lookup({ query: { name: "x", fuzzy: true }, filter: { tag: "a", since: 3, other: null }, "raw-options": { any: ["json"] } });
const titles: string[] = [...byId.hits, ...byName.hits].map(h => h.title + (h.tags ?? []).join(","));
const next: string | null | undefined = byId.next;
return { titles, next, meta: byName.meta ?? null };`},
	{name: "generic_over_tool_names", body: `
async function call<K extends ToolName>(name: K, args: ToolArgsMap[K]): Promise<ToolOutputMap[K]> {
  return tools[name](args);
}
const r = await call("read", { file_path: "x" });
return r.content;`},

	// Incorrect programs, each failing for one reason.
	{name: "wrong_argument_type", body: `await tools.read({ file_path: 42 });`, codes: []string{"TS2322"}},
	{name: "arguments_not_an_object", body: `await tools.read("a.txt");`, codes: []string{"TS2345"}},
	{name: "missing_required_argument", body: `await tools.read({ limit: 3 });`, codes: []string{"TS2345"}},
	{name: "unknown_tool", body: `await tools.nope({});`, codes: []string{"TS2339"}},
	{name: "unknown_quoted_tool", body: `await tools["no-such-tool"]({});`, codes: []string{"TS7053"}},
	{name: "run_code_is_not_a_binding", body: `await tools.run_code({ code: "", description: "" });`, codes: []string{"TS2339"}},
	{name: "excess_argument_on_closed_object", body: `await tools.write({ path: "a", content: "b", mode: 1 });`, codes: []string{"TS2353"}},
	{name: "argument_on_closed_empty_object", body: `await tools["class"]({ x: 1 });`, codes: []string{"TS2322"}},
	{name: "enum_value_not_allowed", body: `await tools["my-tool"]({ mode: "medium" });`, codes: []string{"TS2322"}},
	{name: "const_value_not_allowed", body: `await tools["my-tool"]({ mode: "fast", level: 4 });`, codes: []string{"TS2322"}},
	{name: "oneOf_branch_mismatch", body: `await tools.mcp__srv__lookup({ query: { id: "seven" } });`, codes: []string{"TS2322"}},
	{name: "output_misused", body: `const n: string = (await tools.read({ file_path: "a" })).totalLines;`, codes: []string{"TS2322"}},
	{name: "unknown_output_field", body: `const r = await tools.read({ file_path: "a" }); r.lines;`, codes: []string{"TS2339"}},
	{name: "undefined_is_not_json", body: `await tools["my-tool"]({ mode: "fast", extra: undefined });`, codes: []string{"TS2322"}},
	{name: "function_is_not_json", body: `await tools.write({ path: "a", content: "b", meta: () => 1 });`, codes: []string{"TS2322"}},
	{name: "tool_name_is_typed", body: `try { await tools.read({ file_path: "a" }); } catch (e) { if (e instanceof ToolCallError) { const n: number = e.toolName; } }`, codes: []string{"TS2322"}},
}

var tscError = regexp.MustCompile(`^(\S+?)\.ts\(\d+,\d+\): error (TS\d+): (.*)$`)

// TestTypeScriptSDKTypeChecks compiles the generated SDK with tsc --strict together with
// sample programs wrapped the way the runtime runs them (the body of an async function):
// the correct samples compile, and each incorrect one fails with its intended error.
func TestTypeScriptSDKTypeChecks(t *testing.T) {
	node, tsc := tscPath(t)
	dir := t.TempDir()
	section, err := codemode.SDKSection(sampleRegistry(t, "typescript", nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"sdk.ts", "console.d.ts"}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sdk.ts", sdkDeclarations(t, section)+"\n")
	// The runtime's console (the program gets no DOM or Node types).
	write("console.d.ts", "declare const console: { log(...a: unknown[]): void; info(...a: unknown[]): void; warn(...a: unknown[]): void; error(...a: unknown[]): void; debug(...a: unknown[]): void };\n")
	for _, s := range tsSamples {
		name := "sample_" + s.name + ".ts"
		files = append(files, name)
		write(name, fmt.Sprintf("async function sample_%s() {%s\n}\n", s.name, s.body))
	}
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = `"` + f + `"`
	}
	write("tsconfig.json", `{"compilerOptions":{"strict":true,"noEmit":true,"target":"ES2022","lib":["ES2022"],"types":[],"noImplicitReturns":false},"files":[`+strings.Join(quoted, ",")+`]}`)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, tsc, "-p", filepath.Join(dir, "tsconfig.json"), "--pretty", "false")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	got := map[string][]string{}
	var messages []string
	for _, line := range strings.Split(out.String(), "\n") {
		m := tscError.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		file := filepath.Base(m[1])
		if !slices.Contains(got[file], m[2]) {
			got[file] = append(got[file], m[2])
		}
		messages = append(messages, line)
	}
	if runErr != nil && len(messages) == 0 {
		t.Fatalf("tsc failed without diagnostics: %v\n%s", runErr, out.String())
	}
	if codes := got["sdk"]; len(codes) > 0 {
		t.Errorf("the SDK itself does not type-check: %v\n%s", codes, out.String())
	}
	if codes := got["console.d"]; len(codes) > 0 {
		t.Errorf("console.d.ts: %v", codes)
	}
	for _, s := range tsSamples {
		codes := got["sample_"+s.name]
		slices.Sort(codes)
		if !slices.Equal(codes, s.codes) {
			t.Errorf("sample %s: errors %v, want %v", s.name, codes, s.codes)
		}
	}
	if t.Failed() {
		t.Logf("tsc output:\n%s", out.String())
	}
}
