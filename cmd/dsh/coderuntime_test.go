package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/coderuntime/quickjs"
	"github.com/dsh-go/dsh/config"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/tool"
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

// TestCodeModeBudgetsFromConfig sets each Code Mode budget through the configuration and
// runs a program that passes it, on both backends.
func TestCodeModeBudgetsFromConfig(t *testing.T) {
	type program struct{ ts, py string }
	cases := []struct {
		name    string
		env     map[string]string
		program program
		want    string // the run_code failure message contains it
	}{
		{name: "output", env: map[string]string{"DSH_CODE_MODE_MAX_OUTPUT_BYTES": "40"},
			program: program{ts: "console.log('x'.repeat(100)); return 1", py: "print('x' * 100)\nreturn 1"},
			want:    "(output-limit): outer output exceeded 40 bytes"},
		{name: "compute", env: map[string]string{"DSH_CODE_MODE_COMPUTE_MS": "200"},
			program: program{ts: "for (;;) {}", py: "while True:\n    pass"},
			want:    "(timeout): compute budget exhausted (200ms busy)"},
		{name: "wall", env: map[string]string{"DSH_CODE_MODE_WALL_MS": "300"},
			program: program{ts: "for (;;) {}", py: "while True:\n    pass"},
			want:    "(timeout): wall-clock ceiling reached (300ms)"},
		{name: "heap", env: map[string]string{"DSH_CODE_MODE_HEAP_MIB": "16"},
			program: program{ts: "const hog = []; for (;;) hog.push(new Array(1e6).fill(1));",
				py: "hog = []\nwhile True:\n    hog.append('x' * 1000000 + str(len(hog)))"},
			want: "(worker-exit): worker error: "},
	}
	for _, backend := range []string{"quickjs", "starlark"} {
		for _, tc := range cases {
			t.Run(backend+"/"+tc.name, func(t *testing.T) {
				s := newSandbox(t)
				s.env["DSH_CODE_RUNTIME"] = backend
				for k, v := range tc.env {
					s.env[k] = v
				}
				code := tc.program.ts
				if backend == "starlark" {
					code = tc.program.py
				}
				args, _ := json.Marshal(map[string]string{"code": code, "description": "Pass a budget"})
				r := s.dsh("call", "--json", "--mode", "code", "run_code", string(args)).want(t, 1)
				var res struct {
					IsError bool `json:"isError"`
					Error   struct {
						Message string `json:"message"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
					t.Fatalf("%v in %s", err, r.stdout)
				}
				if !res.IsError || !strings.Contains(res.Error.Message, tc.want) {
					t.Fatalf("result = %+v, want a failure containing %q", res, tc.want)
				}
			})
		}
	}
}

// TestCodeModeBudgetErrors: an invalid budget is a configuration error naming the key.
func TestCodeModeBudgetErrors(t *testing.T) {
	s := newSandbox(t)
	s.env["DSH_CODE_MODE_WALL_MS"] = "0"
	r := s.dsh("tools").want(t, 1)
	mustContain(t, "stderr", r.stderr, `environment variable DSH_CODE_MODE_WALL_MS: codeMode.wallMs must be an integer from 1 to 2147483647, got "0"`)
}

// TestCodeWorkersAhead: a runtime for a command that runs code, in a mode that presents
// run_code, keeps a QuickJS worker started ahead (one that has prepared is ready for the
// first run); commands that only list or render tools, and native mode, start none.
func TestCodeWorkersAhead(t *testing.T) {
	cases := []struct {
		name     string
		mode     tool.Mode
		runsCode bool
		ahead    bool
	}{
		{"code mode, runs code", tool.ModeCode, true, true},
		{"both modes, runs code", tool.ModeBoth, true, true},
		{"native mode", tool.ModeNative, true, false},
		{"lists tools only", tool.ModeCode, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := newRuntime(testwait.Context(t), runtimeConfig{Workspace: t.TempDir(), Mode: tc.mode,
				Config: config.Default(t.TempDir()), NoMCP: true, RunsCode: tc.runsCode})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			js, ok := rt.code.(*quickjs.Runtime)
			if !ok {
				t.Fatalf("code runtime %T", rt.code)
			}
			err = js.WaitReady(testwait.Context(t))
			if tc.ahead && err != nil {
				t.Errorf("WaitReady = %v, want a prepared worker", err)
			}
			if !tc.ahead && !errors.Is(err, quickjs.ErrNoPool) {
				t.Errorf("WaitReady = %v, want ErrNoPool", err)
			}
			if tc.ahead {
				args, _ := json.Marshal(map[string]string{"code": "return 6 * 7", "description": "multiply"})
				res := rt.reg.Execute(testwait.Context(t), tool.Input{CallID: "c1", Name: tool.RunCodeName, Args: rt.reg.ParseArguments(string(args)),
					Agent: rt.reg.NewScope("test", nil)})
				if res.IsError || len(res.Content) != 1 || res.Content[0].Text != "42" {
					t.Errorf("run_code = %+v", res)
				}
			}
		})
	}
}
