package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStarlarkCodeRuntime selects the Starlark backend with codeRuntime and runs a
// Python-flavoured program whose binding call passes the whole pipeline.
func TestStarlarkCodeRuntime(t *testing.T) {
	s := newSandbox(t)
	s.write("a.txt", "one\ntwo\nthree\n")
	s.env["DSH_CODE_RUNTIME"] = "starlark"

	r := s.dsh("tools", "--mode", "code").want(t, 0)
	mustContain(t, "stdout", r.stdout, "Run a Starlark (Python-flavoured) program", "```python", "class Tools(Protocol):")

	program := "r = await tools.read({\"file_path\": \"a.txt\"})\nprint(len(r[\"lines\"]))\nreturn r[\"totalLines\"]"
	args, _ := json.Marshal(map[string]string{"code": program, "description": "Count the lines of a.txt"})
	r = s.dsh("call", "--json", "--mode", "code", "run_code", string(args)).want(t, 0)
	var res struct {
		IsError bool `json:"isError"`
		Value   struct {
			Logs   []string `json:"logs"`
			Result float64  `json:"result"`
		} `json:"value"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v in %s", err, r.stdout)
	}
	if res.IsError || strings.Join(res.Value.Logs, "|") != "3" || res.Value.Result != 3 {
		t.Fatalf("result = %+v from %s", res, r.stdout)
	}

	s.env["DSH_CODE_RUNTIME"] = "node"
	r = s.dsh("tools").want(t, 1)
	mustContain(t, "stderr", r.stderr, `codeRuntime must be "quickjs" or "starlark", got "node"`)
}
