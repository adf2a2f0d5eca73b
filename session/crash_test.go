package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/dsh/content"
)

// The crash test runs this test binary as a child writer (TestMain dispatches on
// crashChildEnv), kills it with SIGKILL at random points, and checks what it left.
const (
	crashRootEnv = "DSH_SESSION_CRASH_ROOT"
	crashCompEnv = "DSH_SESSION_CRASH_COMPRESSION"
)

// crashTurnEvents is the number of events in one turn of crashScript.
const crashTurnEvents = 14

type scripted struct {
	e       Event
	durable bool
}

// crashScript is the deterministic event sequence the child writes: turns of one step
// with three tool calls, where turn/start and every tool/call are durable appends and the
// rest are live.
func crashScript(turns int) []scripted {
	var s []scripted
	for t := range turns {
		s = append(s, crashTurn(t)...)
	}
	return s
}

// crashTurn returns the crashTurnEvents events of turn t; the turn starts at seq
// t*crashTurnEvents.
func crashTurn(t int) []scripted {
	var s []scripted
	add := func(e Event, durable bool) int64 {
		s = append(s, scripted{e, durable})
		return int64(t*crashTurnEvents + len(s) - 1)
	}
	add(TurnStart{Turn: t}.Event(), true)
	add(StepStart{Turn: t}.Event(), false)
	add(UserMessage{Message: content.Message{ID: fmt.Sprintf("u-%d", t), Source: &content.Source{Kind: "user"}, Content: content.Texts("go")}}.Event(), false)
	m := content.Message{ID: fmt.Sprintf("a-%d", t), Source: &content.Source{Kind: "model"}}
	for k := range 3 {
		m.Content = append(m.Content, content.ToolCall(fmt.Sprintf("c%d-%d", t, k), "tool", `{"k":`+strconv.Itoa(k)+`}`))
	}
	add(AssistantMessage{Turn: t, Message: m}.Event(), false)
	for k := range 3 {
		id := fmt.Sprintf("c%d-%d", t, k)
		seq := add(ToolCall{Turn: t, CallID: id, Name: "tool", Arguments: `{"k":` + strconv.Itoa(k) + `}`}.Event(), true)
		if k == 1 {
			sub := CodeDispatchStart{RootCallID: id, ParentCallID: id, SubCallID: id + ":code:0", Name: "read", Arguments: map[string]any{"k": k}}
			add(sub.Event(), false)
			add(CodeDispatch{RootCallID: id, ParentCallID: id, SubCallID: id + ":code:0", Name: "read", Arguments: map[string]any{"k": k},
				Content: content.Texts(strings.Repeat("x", 200))}.Event(), false)
		}
		add(ToolResult{Turn: t, MessageID: "r-" + id, CallID: id, Content: content.Texts("done " + id), SourceEventSeqs: []int64{seq}}.Event(), false)
	}
	add(StepEnd{Turn: t}.Event(), false)
	add(TurnEnd{Turn: t, Reason: EndReason{Kind: EndCompleted}}.Event(), false)
	return s
}

// crashChild writes the script into a new session and prints the seq of every durable
// append once it has returned. It runs until it is killed.
func crashChild() int {
	s, err := Open(os.Getenv(crashRootEnv), Options{
		Compression:        Compression(os.Getenv(crashCompEnv)),
		WriteBatchMaxDelay: 2 * time.Millisecond,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	l, err := s.Create(context.Background(), Header{ID: os.Getenv(crashChildEnv), Cwd: "/crash"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for turn := 0; ; turn++ {
		for _, st := range crashTurn(turn) {
			if err := crashWrite(l.(*FileLog), st); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
		}
	}
}

// crashWrite appends one scripted event and acknowledges a durable one on stdout.
func crashWrite(l *FileLog, st scripted) error {
	if !st.durable {
		_, err := l.Append(st.e)
		return err
	}
	e, err := l.AppendDurable(st.e)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(os.Stdout, "%d\n", e.Seq)
	return err
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills 20 writer processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	root := crashRoot(t)
	const runs = 20
	var total crashStats
	for run := range runs {
		comp := compressions[run%2]
		dir := filepath.Join(root, string(comp)) // a root holds one encoding
		id := fmt.Sprintf("crash-%d", run)
		acks := rng.IntN(14)
		maxAck := runCrashChild(t, exe, dir, comp, id, acks, rng)
		st := checkCrashed(t, dir, comp, id, maxAck)
		total.unknown += st.unknown
		total.notStarted += st.notStarted
		if st.torn > 0 {
			total.torn++
		}
	}
	t.Logf("recovered %d started and %d unstarted calls; %d of %d runs left a torn tail", total.unknown, total.notStarted, total.torn, runs)
}

// crashRoot returns a fresh directory for the crash test, in memory (/dev/shm) when the
// machine has one: a SIGKILL leaves the page cache intact, so what is under test — that
// every acknowledged append was written and that whatever the kill interrupted is
// recovered — does not depend on the disk, and fsyncs on tmpfs keep the test fast.
func crashRoot(t *testing.T) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "dsh-session-crash-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// runCrashChild starts a writer, kills it with SIGKILL after it acknowledged acks durable
// appends (plus a random extra moment), and returns the highest acknowledged seq.
func runCrashChild(t *testing.T, exe, root string, comp Compression, id string, acks int, rng *rand.Rand) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), crashChildEnv+"="+id, crashRootEnv+"="+root, crashCompEnv+"="+string(comp))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	maxAck := int64(-1)
	read := func() bool {
		if !sc.Scan() {
			return false
		}
		n, err := strconv.ParseInt(sc.Text(), 10, 64)
		if err != nil {
			t.Errorf("child printed %q", sc.Text())
			return false
		}
		maxAck = max(maxAck, n)
		return true
	}
	for range acks {
		if !read() {
			break
		}
	}
	// Let the writer run on for a random moment (often mid-batch), then kill it.
	for range rng.IntN(200) {
		_ = rng.Uint64()
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Acknowledgements printed before the kill still count.
	for read() {
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != -1 {
		t.Fatalf("child %s was not killed: %v; stderr: %s", id, err, stderr.String())
	}
	return maxAck
}

// checkCrashed loads a killed writer's session and checks the crash-safety contract.
// crashStats counts what recovery had to do.
type crashStats struct {
	unknown, notStarted, torn int
}

func checkCrashed(t *testing.T, root string, comp Compression, id string, maxAck int64) (st crashStats) {
	t.Helper()
	s, err := Open(root, Options{Compression: comp})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ld, err := s.Load(ctx, id)
	if errors.Is(err, ErrNotFound) && maxAck < 0 {
		return st // killed before its first batch: nothing was promised
	}
	if err != nil {
		t.Fatalf("%s (max ack %d): %v", id, maxAck, err)
	}
	committed := ld.Events[:len(ld.Events)-ld.Recovered]
	st.torn = int(ld.TornBytes)
	// Every acknowledged durable event is there, and what is there is the script's prefix.
	if int64(len(committed)) <= maxAck {
		t.Fatalf("%s: %d events on disk, but seq %d was acknowledged as durable", id, len(committed), maxAck)
	}
	script := crashScript(len(committed)/crashTurnEvents + 1)
	for i, e := range committed {
		want := script[i].e
		want.Seq, want.Time = e.Seq, e.Time
		want, _ = snapshotEvent(nil, want)
		if !eventsEqual(e, want) {
			t.Fatalf("%s: event %d is %+v, want %+v", id, i, e, want)
		}
	}
	// Recovery closes every open call of the tail turn with the right code.
	calls := map[string]int64{}
	for _, e := range committed {
		if e.Type == TypeToolCall {
			c, _ := DecodeToolCall(e)
			calls[c.CallID] = e.Seq
		}
	}
	for _, e := range ld.Events[len(committed):] {
		if e.Type != TypeToolResult {
			continue
		}
		r, err := DecodeToolResult(e)
		if err != nil {
			t.Fatal(err)
		}
		if seq, started := calls[r.CallID]; started {
			st.unknown++
			if r.Error.Code != CodeToolOutcomeUnknown || len(r.SourceEventSeqs) != 1 || r.SourceEventSeqs[0] != seq {
				t.Errorf("%s: started call %s recovered as %+v", id, r.CallID, r)
			}
		} else if st.notStarted++; r.Error.Code != CodeToolNotStarted || r.SourceEventSeqs != nil {
			t.Errorf("%s: unstarted call %s recovered as %+v", id, r.CallID, r)
		}
	}
	if last := ld.Events[len(ld.Events)-1]; last.Type != TypeTurnEnd {
		t.Errorf("%s: log ends with %s after recovery", id, last.Type)
	}
	if RecoveryEvents(ld.Events) != nil {
		t.Errorf("%s: recovered log is still open", id)
	}
	// The derived history pairs every requested call with a result.
	msgs, err := DeriveMessages(ld.Events)
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{}
	for _, m := range msgs {
		for _, b := range m.Content {
			switch b.Type {
			case content.TypeToolCall:
				open[b.ID] = true
			case content.TypeToolResult:
				if !open[b.ToolCallID] {
					t.Errorf("%s: result for unrequested call %s", id, b.ToolCallID)
				}
				delete(open, b.ToolCallID)
			}
		}
	}
	if len(open) != 0 {
		t.Errorf("%s: calls without results in the derived history: %v", id, open)
	}
	// The session resumes: recovery becomes durable and appends continue the file.
	l, err := s.Resume(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	next := TurnStart{Turn: 1000}.Event()
	if _, err := l.AppendDurable(next); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(TurnEnd{Turn: 1000, Reason: EndReason{Kind: EndCompleted}}.Event()); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := s.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if again.Recovered != 0 || again.TornBytes != 0 || len(again.Events) != len(ld.Events)+2 {
		t.Errorf("%s after resume: %d events (want %d), recovered %d, torn %d", id, len(again.Events), len(ld.Events)+2, again.Recovered, again.TornBytes)
	}
	return st
}
