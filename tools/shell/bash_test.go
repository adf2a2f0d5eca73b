package shell

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/internal/testwait"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

func ptr[T any](v T) *T { return &v }

func TestBashText(t *testing.T) {
	reg, _ := setup(t, Config{})
	tests := []struct {
		command, want string
	}{
		{"echo hi", "hi\n"},
		{"printf hi", "hi"},
		{"true", "(no output)"},
		{"cat", "(no output)"}, // stdin is empty, not the terminal
		{"echo out; echo err >&2", "out\n[stderr]\nerr\n"},
		{"printf out; printf err >&2", "out\n[stderr]\nerr"},
		{"echo err >&2", "[stderr]\nerr\n"},
		{"exit 3", "(no output)\n[exit code: 3]"},
		{"echo partial; exit 1", "partial\n[exit code: 1]"},
		{"printf partial; exit 1", "partial\n[exit code: 1]"},
		{"kill -USR1 $$", "(no output)\n[killed by signal: SIGUSR1]"},
		{"echo $NO_COLOR $TERM $PAGER $GIT_PAGER", "1 dumb cat cat\n"},
		{"printf 'caf\\xc3'", "caf\uFFFD"},
	}
	for _, tt := range tests {
		res := call(t, reg, "bash", bashArgs(tt.command, ""))
		if res.IsError {
			t.Errorf("%s: failed: %s", tt.command, text(t, res))
			continue
		}
		if got := text(t, res); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.command, got, tt.want)
		}
	}
}

func TestBashValue(t *testing.T) {
	reg, _ := setup(t, Config{})
	res := call(t, reg, "bash", bashArgs("echo out; echo err >&2; exit 4", ""))
	got, _ := jsonv.Marshal(res.Value)
	want := `{"kind":"foreground","exitCode":4,"signal":null,"timedOut":false,"aborted":false,"timeoutMs":120000,` +
		`"stdout":{"text":"out\n","truncated":false},"stderr":{"text":"err\n","truncated":false}}`
	if string(got) != want {
		t.Errorf("value\n got %s\nwant %s", got, want)
	}
	if res.Meta != nil {
		t.Errorf("meta = %v, want none", res.Meta)
	}
	// The requested timeout is reported as given, and capped.
	for args, wantMs := range map[string]float64{`"timeoutMs":1500.5`: 1500.5, `"timeoutMs":9e9`: 600000} {
		if f := foreground(t, call(t, reg, "bash", bashArgs("true", args))); f.TimeoutMs != wantMs {
			t.Errorf("%s: timeoutMs = %v, want %v", args, f.TimeoutMs, wantMs)
		}
	}
}

// TestBashTimeout: when the timeout expires the command's group gets SIGTERM, and the
// result reports the timeout (as requested) and the signal. The test expires the timeout
// itself once the command has started.
func TestBashTimeout(t *testing.T) {
	reg, tools := setup(t, Config{})
	clock := useManualClock(tools.Runner)
	sleep := uniqueSleep(t)
	pidFile, pidLine := signalFifo(t)
	done := goCall(reg, "bash", bashArgs("echo started; echo $$ > "+pidFile+"; sleep "+sleep, `"timeoutMs":300`))
	pgid := atoi(t, pidLine())
	clock.timeout(t)
	res := testwait.Recv(t, done, "the timed-out call's result")
	f := foreground(t, res)
	if want := "started\n[timed out after 300ms]\n[killed by signal: SIGTERM]"; text(t, res) != want {
		t.Errorf("text = %q, want %q", text(t, res), want)
	}
	if !f.TimedOut || f.Aborted || f.ExitCode != nil || f.Signal == nil || *f.Signal != "SIGTERM" || f.TimeoutMs != 300 {
		t.Errorf("value = %+v", f)
	}
	if got := clock.timeouts(); !slices.Equal(got, []time.Duration{300 * time.Millisecond}) {
		t.Errorf("timeouts armed = %v, want [300ms]", got)
	}
	assertGroupGone(t, pgid)
	assertNoProcess(t, sleep)
}

// TestBashIgnoresSIGTERM: a command that ignores SIGTERM is killed with SIGKILL when the
// grace period ends, and so are its children. The test ends the grace period itself, once
// SIGTERM has been sent and the kill armed.
func TestBashIgnoresSIGTERM(t *testing.T) {
	reg, tools := setup(t, Config{})
	clock := useManualClock(tools.Runner)
	pidFile, pidLine := signalFifo(t)
	sleep := uniqueSleep(t)
	done := goCall(reg, "bash", bashArgs("trap '' TERM; sleep "+sleep+" & echo $$ > "+pidFile+"; sleep "+sleep+"; echo survived", `"timeoutMs":200`))
	pgid := atoi(t, pidLine())
	clock.timeout(t)
	kill := testwait.Recv(t, clock.armed, "the kill after SIGTERM to be armed")
	if kill.grace != testGrace {
		t.Errorf("grace period = %v, want %v", kill.grace, testGrace)
	}
	// SIGTERM has been sent and is ignored: the command is still there.
	if live, _ := liveMembers(pgid); !live {
		t.Errorf("process group %d is gone before the grace period ended:\n%s", pgid, psGroup(pgid))
	}
	select {
	case res := <-done:
		t.Fatalf("the call returned before the grace period ended: %q", text(t, res))
	default:
	}
	kill.fire()
	res := testwait.Recv(t, done, "the killed call's result")
	if want := "(no output)\n[timed out after 200ms]\n[killed by signal: SIGKILL]"; text(t, res) != want {
		t.Errorf("text = %q, want %q", text(t, res), want)
	}
	assertGroupGone(t, pgid)
	assertNoProcess(t, sleep)
}

// TestBashTrapsSIGTERMAndExits: a command that handles SIGTERM and exits 0 after the
// timeout still reports the timeout, and the kill armed after SIGTERM is disarmed.
func TestBashTrapsSIGTERMAndExits(t *testing.T) {
	reg, tools := setup(t, Config{})
	clock := useManualClock(tools.Runner)
	pidFile, pidLine := signalFifo(t)
	done := goCall(reg, "bash", bashArgs("trap 'echo bye; exit 0' TERM; echo $$ > "+pidFile+"; while :; do sleep 0.02; done", `"timeoutMs":200`))
	pidLine()
	clock.timeout(t)
	kill := testwait.Recv(t, clock.armed, "the kill after SIGTERM to be armed")
	res := testwait.Recv(t, done, "the timed-out call's result")
	f := foreground(t, res)
	if !f.TimedOut || f.ExitCode == nil || *f.ExitCode != 0 {
		t.Errorf("value = %+v", f)
	}
	// bash may also report the loop's sleep that SIGTERM ended ("Terminated").
	if got := text(t, res); !strings.HasPrefix(got, "bye\n") || !strings.HasSuffix(got, "[timed out after 200ms]") || strings.Contains(got, "[exit code") || strings.Contains(got, "[killed") {
		t.Errorf("text = %q", got)
	}
	kill.mu.Lock()
	stopped := kill.stopped
	kill.mu.Unlock()
	if !stopped {
		t.Error("the kill armed after SIGTERM was not disarmed when the command ended")
	}
}

// TestBashChildrenDoNotOutliveTheCommand: a command that forks children and exits returns
// at once, and the children are stopped with it, including one in a new session.
func TestBashChildrenDoNotOutliveTheCommand(t *testing.T) {
	reg, _ := setup(t, Config{})
	sleep := uniqueSleep(t)
	res := call(t, reg, "bash", bashArgs("sleep "+sleep+" & (sleep "+sleep+" &); setsid sleep "+sleep+" </dev/null >/dev/null 2>&1 & echo $$", ""))
	out := foreground(t, res)
	if out.ExitCode == nil || *out.ExitCode != 0 || out.TimedOut {
		t.Errorf("value = %+v", out)
	}
	assertGroupGone(t, atoi(t, out.Stdout.Text))
	// The setsid child left the group and its output, and is stopped all the same.
	assertNoProcess(t, sleep)
}

// TestBashForkBombUnderTimeout: an exponential fork (bounded, for the machine's sake) is
// stopped as a whole when the timeout fires.
func TestBashForkBombUnderTimeout(t *testing.T) {
	reg, tools := setup(t, Config{})
	pidFile, pidLine := signalFifo(t)
	sleep := uniqueSleep(t)
	clock := useManualClock(tools.Runner)
	script := "echo $$ > " + pidFile + "; bomb() { if [ $1 -gt 0 ]; then bomb $(($1-1)) & bomb $(($1-1)) & else echo leaf > " + pidFile + "; fi; sleep " + sleep + "; }; bomb 7"
	done := goCall(reg, "bash", bashArgs(script, `"timeoutMs":1500`))
	pgid := atoi(t, pidLine())
	// The timeout expires while the bomb is spreading: once it is 8 processes deep.
	if line := pidLine(); line != "leaf" {
		t.Fatalf("the fork bomb wrote %q, want leaf", line)
	}
	clock.timeout(t)
	// Whatever ignores SIGTERM while forking is killed after the grace period.
	go func() {
		for kill := range clock.armed {
			kill.fire()
		}
	}()
	res := testwait.Recv(t, done, "the timed-out call's result")
	close(clock.armed)
	f := foreground(t, res)
	if !f.TimedOut {
		t.Errorf("value = %+v", f)
	}
	assertGroupGone(t, pgid)
	assertNoProcess(t, sleep)
}

// TestBashCancellation: cancelling the call's context mid-command kills the group and the
// call fails with the abort error.
func TestBashCancellation(t *testing.T) {
	reg, _ := setup(t, Config{})
	pidFile, pidLine := signalFifo(t)
	sleep := uniqueSleep(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *tool.Result)
	go func() {
		done <- callCtx(ctx, reg, nil, "bash", bashArgs("echo $$ > "+pidFile+"; sleep "+sleep+" & sleep "+sleep, ""))
	}()
	pgid := atoi(t, pidLine())
	cancel()
	res := testwait.Recv(t, done, "the cancelled call's result")
	if !res.IsError || text(t, res) != "Error: tool call aborted" || code(res) != tool.CodeAborted || res.Error.Info.Name != "AbortError" {
		t.Errorf("result = %+v", res)
	}
	assertGroupGone(t, pgid)
	assertNoProcess(t, sleep)
}

func TestBashLargeOutput(t *testing.T) {
	t.Run("100 MB keeps the tail and spills everything", func(t *testing.T) {
		spill := t.TempDir()
		reg, _ := setup(t, Config{SpillDir: spill, MaxSpillBytes: 128 << 20})
		res := call(t, reg, "bash", bashArgs("head -c 100000000 /dev/zero | tr '\\0' a; echo; echo the end", ""))
		f := foreground(t, res)
		if !f.Stdout.Truncated || f.Stdout.SpillPath == "" || len(f.Stdout.Text) != DefaultMaxOutputBytes {
			t.Fatalf("stdout: truncated=%v spill=%q len=%d", f.Stdout.Truncated, f.Stdout.SpillPath, len(f.Stdout.Text))
		}
		if !strings.HasSuffix(f.Stdout.Text, "aaaa\nthe end\n") {
			t.Errorf("the tail is not kept: %q", f.Stdout.Text[len(f.Stdout.Text)-20:])
		}
		st, err := os.Stat(f.Stdout.SpillPath)
		if err != nil || st.Size() != 100_000_000+9 || filepath.Dir(f.Stdout.SpillPath) != spill {
			t.Errorf("spill file %s: %v, %v", f.Stdout.SpillPath, st, err)
		}
		if want := "\nthe end\n\n[output truncated; full output: " + f.Stdout.SpillPath + "]"; !strings.HasSuffix(text(t, res), want) {
			t.Errorf("text ends %q", text(t, res)[len(text(t, res))-100:])
		}
		os.Remove(f.Stdout.SpillPath)
	})
	t.Run("over the spill cap the file is dropped", func(t *testing.T) {
		spill := t.TempDir()
		reg, _ := setup(t, Config{SpillDir: spill, MaxSpillBytes: 1 << 20, MaxOutputBytes: 1000})
		res := call(t, reg, "bash", bashArgs("head -c 3000000 /dev/zero | tr '\\0' b; echo x >&2", ""))
		f := foreground(t, res)
		if !f.Stdout.Truncated || f.Stdout.SpillPath != "" || len(f.Stdout.Text) != 1000 {
			t.Errorf("stdout: %+v", f.Stdout)
		}
		if want := strings.Repeat("b", 1000) + "\n[output truncated; full output: (unavailable)]\n[stderr]\nx\n"; text(t, res) != want {
			t.Errorf("text = %q", text(t, res))
		}
		if entries, _ := os.ReadDir(spill); len(entries) != 0 {
			t.Errorf("%d spill files left behind", len(entries))
		}
	})
}

func TestBashEnvironment(t *testing.T) {
	t.Setenv("DSHTEST_API_KEY", "k")
	t.Setenv("DSHTEST_TOKEN_X", "t")
	t.Setenv("DSH_SESSION", "s")
	t.Setenv("DSHTEST_PLAIN", "p")
	reg, _ := setup(t, Config{Env: map[string]string{"FORWARDED_TOKEN": "f"}})
	res := call(t, reg, "bash", bashArgs("echo ${DSHTEST_API_KEY-gone} ${DSHTEST_TOKEN_X-gone} ${DSH_SESSION-gone} $DSHTEST_PLAIN $FORWARDED_TOKEN", ""))
	if got := text(t, res); got != "gone gone gone p f\n" {
		t.Errorf("text = %q", got)
	}
}

func TestBashWorkdir(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "sub", "deep"), 0o755)
	os.WriteFile(filepath.Join(root, "file"), nil, 0o644)
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(root, "escape"))
	reg, tools := setup(t, Config{Root: root})
	tests := []struct {
		workdir, want, code string
	}{
		{"", tools.Runner.Root() + "\n", ""},
		{"sub", filepath.Join(tools.Runner.Root(), "sub") + "\n", ""},
		{"sub/deep/..", filepath.Join(tools.Runner.Root(), "sub") + "\n", ""},
		{filepath.Join(root, "sub", "deep"), filepath.Join(tools.Runner.Root(), "sub", "deep") + "\n", ""},
		{"..", `Error: cannot run in "..": the workdir leads outside the workspace`, "FS_SANDBOX_DENIED"},
		{"/etc", `Error: cannot run in "/etc": the workdir leads outside the workspace`, "FS_SANDBOX_DENIED"},
		{"escape", `Error: cannot run in "escape": the workdir leads outside the workspace`, "FS_SANDBOX_DENIED"},
		{"missing", `Error: workdir "missing" does not exist`, "FS_NOT_FOUND"},
		{"file", `Error: workdir "file" is not a directory`, "FS_NOT_DIRECTORY"},
	}
	for _, tt := range tests {
		extra := ""
		if tt.workdir != "" {
			b, _ := jsonv.Marshal(tt.workdir)
			extra = `"workdir":` + string(b)
		}
		res := call(t, reg, "bash", bashArgs("pwd", extra))
		if got := text(t, res); got != tt.want || code(res) != tt.code || res.IsError != (tt.code != "") {
			t.Errorf("workdir %q: %q (%s), want %q (%s)", tt.workdir, got, code(res), tt.want, tt.code)
		}
	}
}

func TestWorkdirThroughSymlinkedRoot(t *testing.T) {
	real := t.TempDir()
	os.Mkdir(filepath.Join(real, "sub"), 0o755)
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(Config{Root: link})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, dir := range []string{filepath.Join(link, "sub"), filepath.Join(real, "sub"), "sub"} {
		if got, err := r.Workdir(dir); err != nil || got != filepath.Join(real, "sub") {
			t.Errorf("Workdir(%s) = %q, %v", dir, got, err)
		}
	}
}

func TestBashArgumentErrors(t *testing.T) {
	reg, _ := setup(t, Config{})
	tests := []struct {
		args, want, code string
	}{
		{`{"command":" ","description":"d"}`, "Error: invalid command: expected a non-empty string", ""},
		{`{"command":"ls","description":""}`, "Error: invalid description: expected a non-empty string", ""},
		{`{"command":"ls","description":"d","timeoutMs":0}`, "Error: invalid timeoutMs: expected a positive number, got 0", ""},
		{`{"command":"ls","description":"d","timeoutMs":-2.5}`, "Error: invalid timeoutMs: expected a positive number, got -2.5", ""},
		{`{"command":"ls"}`, `Error: invalid arguments: missing required property "description"`, tool.CodeInvalidArgs},
		{`{"command":"ls","description":"d","timeoutMs":"5"}`, `Error: invalid arguments: "timeoutMs" must be a number`, tool.CodeInvalidArgs},
	}
	for _, tt := range tests {
		res := call(t, reg, "bash", tt.args)
		if !res.IsError || text(t, res) != tt.want || code(res) != tt.code {
			t.Errorf("%s:\n got %q (%s)\nwant %q (%s)", tt.args, text(t, res), code(res), tt.want, tt.code)
		}
	}

	noBg, _ := setup(t, Config{DisableBackground: true})
	if noBg.Get("job_output", nil) != nil {
		t.Error("job tools are registered although background execution is disabled")
	}
	if d := noBg.Get("bash", nil).Description; !strings.Contains(d, "Background execution is not available") || strings.Contains(d, "run_in_background") {
		t.Errorf("description = %q", d)
	}
	res := call(t, noBg, "bash", `{"command":"ls","description":"d","run_in_background":true}`)
	if code(res) != tool.CodeInvalidArgs || !strings.Contains(text(t, res), `"run_in_background" is not a declared property`) {
		t.Errorf("disabled background: %q", text(t, res))
	}
}

func TestBashSchemas(t *testing.T) {
	reg, _ := setup(t, Config{})
	schemas, err := reg.Schemas(nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, s := range schemas {
		names[s.Name] = true
		if s.Name != "bash" {
			continue
		}
		b, _ := jsonv.Marshal(s.Parameters)
		for _, p := range []string{`"command"`, `"description"`, `"timeoutMs"`, `"workdir"`, `"run_in_background"`, `"required":["command","description"]`} {
			if !strings.Contains(string(b), p) {
				t.Errorf("bash parameters lack %s: %s", p, b)
			}
		}
	}
	for _, n := range []string{"bash", "job_output", "job_list", "job_kill"} {
		if !names[n] {
			t.Errorf("tool %s is not registered", n)
		}
	}
}

func TestBashCards(t *testing.T) {
	reg, _ := setup(t, Config{})
	def := reg.Get("bash", nil)
	calls := []struct {
		args string
		want *card.Call
	}{
		{`{"command":"make test","description":"Run tests"}`, &card.Call{Card: card.Terminal, Title: "make test", Description: "Run tests"}},
		{`{"command":"make","description":"Build","workdir":"sub"}`, &card.Call{Card: card.Terminal, Title: "make", Description: "Build", Cwd: "sub"}},
		{`{"command":"npm start","description":"Start the server","run_in_background":true}`,
			&card.Call{Card: card.Generic, Title: "npm start", Kind: card.KindExecute, RawInput: "npm start", Content: content.Texts("Start the server")}},
	}
	for _, tt := range calls {
		if diff := cmp.Diff(tt.want, def.PresentCall(tool.ParseArguments(tt.args))); diff != "" {
			t.Errorf("PresentCall(%s) (-want +got):\n%s", tt.args, diff)
		}
	}
	fg := tool.ParseArguments(`{"command":"x","description":"d"}`)
	bg := tool.ParseArguments(`{"command":"x","description":"d","run_in_background":true}`)
	results := []struct {
		name string
		args any
		res  card.ToolResult
		want *card.Result
	}{
		{"exit 0", fg, card.ToolResult{Content: content.Texts("hello\n")}, &card.Result{Card: card.Terminal, Output: "hello\n", ExitCode: ptr(0)}},
		{"exit 2", fg, card.ToolResult{Content: content.Texts("oops\n[exit code: 2]")}, &card.Result{Card: card.Terminal, Output: "oops", ExitCode: ptr(2)}},
		{"signal", fg, card.ToolResult{Content: content.Texts("(no output)\n[timed out after 5ms]\n[killed by signal: SIGTERM]")},
			&card.Result{Card: card.Terminal, Output: "(no output)\n[timed out after 5ms]", Signal: "SIGTERM"}},
		{"error", fg, card.ToolResult{IsError: true, Content: content.Texts("Error: tool call aborted\n")},
			&card.Result{Card: card.Generic, Content: content.Texts("```console\nError: tool call aborted\n```")}},
		{"background", bg, card.ToolResult{Content: content.Texts("started background job bash-1")},
			&card.Result{Card: card.Generic, Content: content.Texts("```console\nstarted background job bash-1\n```")}},
		{"two blocks", fg, card.ToolResult{Content: []content.Block{content.Text("a"), content.Text("b")}}, nil},
	}
	for _, tt := range results {
		if diff := cmp.Diff(tt.want, def.PresentResult(tt.args, tt.res)); diff != "" {
			t.Errorf("%s: PresentResult (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestNewRunnerErrors(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "f")
	os.WriteFile(file, nil, 0o644)
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "shell: Config.Root (the workspace root) is required"},
		{Config{Root: filepath.Join(root, "missing")}, "no such file or directory"},
		{Config{Root: file}, "is not a directory"},
		{Config{Root: root, Sandbox: "docker"}, `shell: unknown sandbox "docker" (supported: "auto", "bwrap", "none")`},
		{Config{Root: root, Sandbox: SandboxBwrap, Bwrap: "bwrap"}, `shell: Config.Bwrap must be an absolute path, got "bwrap"`},
		{Config{Root: root, Sandbox: SandboxBwrap, Bwrap: "/nonexistent/bwrap"}, `needs bubblewrap, which is not installed at /nonexistent/bwrap`},
		{Config{Root: root, ReadOnlyPaths: []string{".git"}}, `shell: read-only path ".git" is not absolute`},
		{Config{Root: root, Shell: "/nonexistent/zsh"}, `shell: shell "/nonexistent/zsh"`},
		{Config{Root: root, Timeout: -1}, "shell: Timeout must be positive"},
	}
	for _, tt := range tests {
		if _, err := NewRunner(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewRunner(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
	}
}
