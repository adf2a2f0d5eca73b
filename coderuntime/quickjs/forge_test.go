package quickjs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/google/go-cmp/cmp"
)

// forgeArg makes the test binary a hostile worker that sends scripted frames.
const forgeArg = "__forge__"

// forgedWorker is a worker that forges protocol traffic: what a compromised or buggy
// worker could send. It reads the start frame, then plays the named scenario.
func forgedWorker(scenario string) int {
	switch scenario {
	case "stall": // never prepares: reads nothing, writes nothing
		for {
			time.Sleep(time.Hour)
		}
	case "exit-at-once": // dies before it is ever ready
		return 9
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	startLine, err := in.ReadBytes('\n')
	if err != nil {
		return 3
	}
	out := bufio.NewWriter(os.Stdout)
	send := func(lines ...string) {
		for _, l := range lines {
			out.WriteString(l)
			out.WriteByte('\n')
		}
		out.Flush()
	}
	// replies reads n reply frames and returns them as a JSON array.
	replies := func(n int) string {
		var got []string
		for range n {
			line, err := in.ReadString('\n')
			if err != nil {
				return "[]"
			}
			got = append(got, strings.TrimSpace(line))
		}
		return "[" + strings.Join(got, ",") + "]"
	}
	hang := func() int {
		for {
			time.Sleep(time.Hour)
		}
	}
	switch scenario {
	case "junk":
		send(
			`null`, `42`, `"junk"`, `[]`, `not json at all`, "\xff\xfe",
			`{"type":"nope"}`, `{"type":"call"}`,
			`{"type":"call","id":"x","global":"tools","name":"real","args":{}}`,
			`{"type":"call","id":1.5,"global":"tools","name":"real","args":{}}`,
			`{"type":"call","id":-1,"global":"tools","name":"real","args":{}}`,
			`{"type":"call","id":1e300,"global":"tools","name":"real","args":{}}`,
			`{"type":"call","id":9,"global":7,"name":"real","args":{}}`,
			`{"type":"call","id":9,"global":"tools","name":7,"args":{}}`,
			`{"type":"log"}`, `{"type":"log","text":null}`, `{"type":"log","text":7}`, `{"type":"log","text":{}}`,
			`{"type":"log","text":"a","text":"b"}`, `{"type":"log","text":"\ud800"}`,
			`{"type":"done","error":5}`, `{"type":"done","error":{"kind":"exception","message":5}}`,
			`{"type":"done","error":{"kind":"invented","message":"bad kind"}}`,
			`{"type":"done","error":{"kind":"timeout","message":"forged timeout"}}`,
			`{"type":"call","id":1,"global":"tools","name":"real","args":{}}`,
		)
		r := replies(1)
		var frames []struct {
			Value json.RawMessage `json:"value"`
		}
		if json.Unmarshal([]byte(r), &frames) != nil || len(frames) != 1 {
			return 4
		}
		send(`{"type":"done","value":` + string(frames[0].Value) + `}`)
		return hang()
	case "calls":
		send(
			`{"type":"call","id":7777,"global":"tools","name":"missing","args":{}}`,
			`{"type":"call","id":7777,"global":"tools","name":"missing","args":{}}`,
			`{"type":"call","id":7778,"global":"tools","name":"constructor","args":{}}`,
			`{"type":"call","id":7779,"global":"nope","name":"real","args":{}}`,
			`{"type":"call","id":7780,"global":"tools","name":"real","args":-0}`,
			`{"type":"call","id":7781,"global":"tools","name":"real","args":[1e400]}`,
			`{"type":"call","id":7782,"global":"tools","name":"real"}`,
			`{"type":"call","id":7783,"global":"tools","name":"real","args":{"k":"\ud800"}}`,
		)
		send(`{"type":"done","value":` + replies(7) + `}`)
		return hang()
	case "seqs":
		// Calls the host refuses itself take no sequence number.
		send(
			`{"type":"call","id":1,"global":"tools","name":"seq","args":"a"}`,
			`{"type":"call","id":2,"global":"tools","name":"missing","args":"x"}`,
			`{"type":"call","id":3,"global":"tools","name":"seq","args":-0}`,
			`{"type":"call","id":1,"global":"tools","name":"seq","args":"again"}`,
			`{"type":"call","id":4,"global":"tools","name":"seq","args":"b"}`,
			`{"type":"call","id":5,"global":"nope","name":"seq","args":"y"}`,
			`{"type":"call","id":6,"global":"tools","name":"seq","args":"c"}`,
		)
		replies(5)
		send(`{"type":"done","value":"ok"}`)
		return hang()
	case "idle":
		// Idle frames as a lying or buggy worker may send them. Each send is one write,
		// far below what a pipe takes at once, so the host reads each batch whole.
		call := func(id int, arg string) string {
			return fmt.Sprintf(`{"type":"call","id":%d,"global":"tools","name":"echo","args":%q}`, id, arg)
		}
		idle := func(id int) string { return fmt.Sprintf(`{"type":"idle","id":%d}`, id) }
		var got []string
		// Before any call, then a call with its idle frame: the reader carries call 1.
		send(idle(5), call(1, "a"), idle(1))
		got = append(got, replies(1))
		// Call 2 with its idle frame (carried), a duplicate, frames after the idle frame
		// (a log, call 3), an idle frame for an unknown call, one for call 3 that does not
		// follow it (so call 3 goes to a carrier), malformed ones.
		send(call(2, "b"), idle(2), idle(2), `{"type":"log","text":"after idle"}`, call(3, "c"), idle(99), idle(3),
			`{"type":"idle","id":"3"}`, `{"type":"idle"}`, `{"type":"idle","id":-1}`, `{"type":"idle","id":3.5}`,
			`{"type":"idle", "id":3}`)
		got = append(got, replies(2))
		// Two calls outstanding, then an idle frame for the second: call 4 goes to a
		// carrier, the reader carries call 5.
		send(call(4, "d"), call(5, "e"), idle(5))
		got = append(got, replies(2))
		var all []string
		for _, r := range got {
			var frames []json.RawMessage
			if json.Unmarshal([]byte(r), &frames) != nil {
				return 4
			}
			for _, f := range frames {
				all = append(all, string(f))
			}
		}
		slices.Sort(all)
		send(`{"type":"done","value":[` + strings.Join(all, ",") + `]}`)
		return hang()
	case "idle-slow":
		// A call the reader carries, whose binding only returns when the run ends.
		send(`{"type":"call","id":1,"global":"tools","name":"slow","args":null}`, `{"type":"idle","id":1}`)
		return hang()
	case "flood":
		for range 50 {
			send(`{"type":"log","text":"` + strings.Repeat("F", 100) + `","forged":true}`)
		}
		send(`{"type":"done","value":["` + strings.Repeat("V", 100000) + `"]}`)
		return hang()
	case "bigvalue":
		send(`{"type":"done","value":["` + strings.Repeat("V", 100000) + `"]}`)
		return hang()
	case "quotes":
		send(`{"type":"log","text":"` + strings.Repeat(`\"`, 1000000) + `"}`)
		return hang()
	case "both":
		send(`{"type":"done","value":"lied","error":{"kind":"exception","message":"fake failure"}}`)
		return hang()
	case "deep":
		send(`{"type":"done","value":` + strings.Repeat("[", 3000) + "null" + strings.Repeat("]", 3000) + `}`)
		return hang()
	case "bigerror":
		send(`{"type":"done","error":{"kind":"exception","message":"` + strings.Repeat("€", 1000) + `"}}`)
		return hang()
	case "output-limit":
		send(`{"type":"log","text":"kept"}`, `{"type":"output-limit"}`)
		return hang()
	case "lossy-done":
		send(`{"type":"done","value":-0}`)
		return hang()
	case "null-done":
		send(`{"type":"done","value":null}`)
		return hang()
	case "budget":
		send(`{"type":"budget"}`)
		return hang()
	case "after-done":
		send(`{"type":"done","value":1}`, `{"type":"log","text":"late"}`,
			`{"type":"call","id":1,"global":"tools","name":"spy","args":{}}`)
		return hang()
	case "oversize":
		out.WriteString(`{"type":"log","text":"`)
		out.WriteString(strings.Repeat("x", 17<<20))
		send(`"}`)
		return hang()
	case "exit7":
		send(`{"type":"log","text":"last words"}`)
		return 7
	case "silent":
		return hang()
	case "close-output":
		os.Stdout.Close()
		return hang()
	case "environment":
		// Report what the worker process was given: environment, directory, process group
		// and, after applying the start frame's limit as WorkerMain does, RLIMIT_DATA.
		var start startFrame
		if json.Unmarshal(startLine, &start) != nil {
			return 4
		}
		var limit syscall.Rlimit
		if !raceEnabled {
			if err := setDataLimit(start.Limits.DataLimitBytes); err != nil {
				return 5
			}
		}
		syscall.Getrlimit(syscall.RLIMIT_DATA, &limit)
		wd, _ := os.Getwd()
		pgid, _ := syscall.Getpgid(0)
		report, _ := json.Marshal(map[string]any{
			"env": len(os.Environ()), "wd": wd, "leader": pgid == os.Getpid(),
			"dataLimit": limit.Cur == uint64(start.Limits.DataLimitBytes) || raceEnabled,
			"heap":      start.Limits.MaxHeapBytes, "compute": start.Limits.ComputeMs,
		})
		send(`{"type":"done","value":` + string(report) + `}`)
		return hang()
	case "spin":
		for {
		}
	}
	return 2
}

// forged runs one scenario against a runtime whose worker is the forging test binary.
func forged(t *testing.T, scenario string, cfg Config, bindings []coderuntime.Namespace) coderuntime.Result {
	t.Helper()
	cfg.WorkerCommand = []string{testExe(t), forgeArg, scenario}
	rt := newRuntime(t, cfg)
	// A scenario that sets no wall-clock ceiling ends by itself; one that a loaded machine
	// slows down (the 17 MiB frame of "oversize") must not meet a real ceiling, and a hang
	// fails at the test's deadline (see run).
	if cfg.MaxWallMs == 0 {
		rt.wallTimer = neverTimer
	}
	// Only "close-output" waits out the exit grace; elsewhere the worker's exit status must
	// be awaited however long a loaded machine takes to report it.
	if scenario != "close-output" {
		rt.graceTimer = neverTimer
	}
	return run(t, rt, "return 'the program is ignored'", bindings)
}

func TestHostilePeer(t *testing.T) {
	var spied atomic.Int32
	var realCalls atomic.Int32
	bindings := tools(map[string]coderuntime.Func{
		"real": func(context.Context, any) (any, error) { realCalls.Add(1); return "still-works", nil },
		"spy":  func(context.Context, any) (any, error) { spied.Add(1); return nil, nil },
	})
	tests := []struct {
		scenario string
		cfg      Config
		check    func(t *testing.T, res coderuntime.Result)
	}{
		{"junk", Config{}, func(t *testing.T, res coderuntime.Result) {
			wantValue(t, res, `"still-works"`)
			if len(res.Logs) != 0 {
				t.Errorf("junk logs were accepted: %q", res.Logs)
			}
		}},
		{"calls", Config{}, func(t *testing.T, res coderuntime.Result) {
			lossy := `"binding arguments must be lossless JSON"`
			wantValue(t, res, `[`+
				`{"type":"reply","id":7777,"ok":false,"message":"unknown binding \"tools.missing\""},`+
				`{"type":"reply","id":7778,"ok":false,"message":"unknown binding \"tools.constructor\""},`+
				`{"type":"reply","id":7779,"ok":false,"message":"unknown binding \"nope.real\""},`+
				`{"type":"reply","id":7780,"ok":false,"message":`+lossy+`},`+
				`{"type":"reply","id":7781,"ok":false,"message":`+lossy+`},`+
				`{"type":"reply","id":7782,"ok":false,"message":`+lossy+`},`+
				`{"type":"reply","id":7783,"ok":false,"message":`+lossy+`}]`)
		}},
		{"flood", Config{MaxOutputBytes: 200}, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 200 bytes")
			if n := resultBytes(t, res); n > 200 {
				t.Errorf("%d bytes", n)
			}
		}},
		{"bigvalue", Config{MaxOutputBytes: 64}, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 64 bytes")
		}},
		{"quotes", Config{MaxOutputBytes: 96}, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 96 bytes")
			if len(res.Logs) != 1 || strings.Trim(res.Logs[0], `"`) != "" || resultBytes(t, res) > 96 {
				t.Errorf("logs = %q", res.Logs)
			}
		}},
		{"both", Config{}, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureException, "fake failure")
		}},
		{"deep", Config{}, func(t *testing.T, res coderuntime.Result) {
			wantValue(t, res, strings.Repeat("[", 3000)+"null"+strings.Repeat("]", 3000))
		}},
		{"bigerror", Config{MaxOutputBytes: 64}, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 64 bytes")
		}},
		{"output-limit", Config{}, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureOutputLimit, "outer output exceeded 67108864 bytes")
			if diff := cmp.Diff([]string{"kept"}, res.Logs); diff != "" {
				t.Error(diff)
			}
		}},
		{"lossy-done", Config{}, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureInvalidOutput, "program completion must be lossless JSON")
		}},
		{"null-done", Config{}, func(t *testing.T, res coderuntime.Result) { wantValue(t, res, "null") }},
		{"budget", Config{ComputeMs: 1234}, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureTimeout, "compute budget exhausted (1234ms busy)")
		}},
		{"after-done", Config{}, func(t *testing.T, res coderuntime.Result) {
			wantValue(t, res, "1")
			if len(res.Logs) != 0 {
				t.Errorf("logs after completion were accepted: %q", res.Logs)
			}
		}},
		{"oversize", Config{MaxOutputBytes: 1024}, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureWorkerExit, "worker error: protocol frame exceeds 16777216 bytes")
		}},
		{"exit7", Config{}, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureWorkerExit, "worker exited with code 7 before completing")
			if diff := cmp.Diff([]string{"last words"}, res.Logs); diff != "" {
				t.Error(diff)
			}
		}},
		{"silent", Config{MaxWallMs: 200}, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureTimeout, "wall-clock ceiling reached (200ms)")
		}},
		{"close-output", Config{}, func(t *testing.T, res coderuntime.Result) {
			wantFailure(t, res, coderuntime.FailureWorkerExit, "worker error: the worker closed its output without completing")
		}},
		{"environment", Config{MaxHeapMB: 64, ComputeMs: 1500}, func(t *testing.T, res coderuntime.Result) {
			wantValue(t, res, `{"compute":1500,"dataLimit":true,"env":0,"heap":67108864,"leader":true,"wd":"/"}`)
		}},
		{"spin", Config{ComputeMs: 100}, func(t *testing.T, res coderuntime.Result) {
			// The worker never reports its budget; the host's CPU backstop kills it.
			wantFailure(t, res, coderuntime.FailureTimeout, "compute budget exhausted (100ms busy)")
		}},
	}
	for _, tt := range tests {
		// The same hostile worker started for its run, and started ahead of it by a pool
		// (which reads ahead for a ready frame that a forged worker never sends).
		for _, pool := range []int{0, 1} {
			t.Run(fmt.Sprintf("%s/pool=%d", tt.scenario, pool), func(t *testing.T) {
				t.Parallel()
				cfg := tt.cfg
				cfg.Pool = pool
				tt.check(t, forged(t, tt.scenario, cfg, bindings))
			})
		}
	}
	t.Cleanup(func() {
		if n := spied.Load(); n != 0 {
			t.Errorf("a call after completion was dispatched %d times", n)
		}
	})
}

// The host numbers the calls that reach a binding densely from 0, in the order their
// frames arrived; refused frames (unknown names, lossy arguments, a repeated id) take no
// number.
func TestCallSeqSkipsRefusedFrames(t *testing.T) {
	var mu sync.Mutex
	got := map[string]uint64{}
	res := forged(t, "seqs", Config{}, tools(map[string]coderuntime.Func{
		"seq": func(ctx context.Context, args any) (any, error) {
			n, ok := coderuntime.CallSeq(ctx)
			if !ok {
				return nil, errors.New("no sequence number")
			}
			mu.Lock()
			got[args.(string)] = n
			mu.Unlock()
			return nil, nil
		},
	}))
	wantValue(t, res, `"ok"`)
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(map[string]uint64{"a": 0, "b": 1, "c": 2}, got); diff != "" {
		t.Errorf("sequence numbers (-want +got):\n%s", diff)
	}
}

func TestSpawnFailure(t *testing.T) {
	rt := newRuntime(t, Config{WorkerCommand: []string{"/nonexistent/dsh-worker"}})
	res := run(t, rt, "return 1", nil)
	if res.Error == nil || res.Error.Kind != coderuntime.FailureWorkerExit || !strings.HasPrefix(res.Error.Message, "worker error: start /nonexistent/dsh-worker") {
		t.Errorf("%+v", res.Error)
	}
}
