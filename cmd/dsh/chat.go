package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	xterm "golang.org/x/term"

	"github.com/dsh-go/dsh/internal/suggest"
	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/tool"
)

// chatHelp lists the chat loop's slash commands.
const chatHelp = `Type a message and press Enter. End a line with \ to continue on the next one;
pasted text keeps its lines (press Enter to send it). Ctrl-C stops the running turn;
at the prompt it clears the input, and a second Ctrl-C (or Ctrl-D) quits.

  /help            this help
  /model [NAME]    show the model, or switch to NAME for the next turns
  /mode [MODE]     show how tools reach the model, or set it: native, code or both
  /clear           start a new session (the current one stays saved)
  /resume [ID]     list this workspace's sessions, or continue the one with ID (a prefix will do)
  /usage           the token usage this session's log records
  /quit            leave (also /exit, Ctrl-D)
`

// chatCommands are the slash commands, for "did you mean".
var chatCommands = []string{"help", "model", "mode", "clear", "resume", "usage", "quit", "exit"}

// runChat implements the interactive chat: "dsh" with no command (or "dsh chat"). It keeps
// one session open in the workspace — a new one, or the one --resume/--continue names, whose
// history it shows — and runs a turn for every message typed at the prompt.
func runChat(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "chat", "[chat] [flags]")
	sf := addSessionFlags(fs, e)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := checkApproval(*sf.preset); err != nil {
		return err
	}
	if len(pos) > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q: to run one task, use dsh run %q", pos[0], strings.Join(pos, " "))}
	}
	if e.stdin == nil || !xterm.IsTerminal(int(e.stdin.Fd())) {
		return &usageError{`the chat needs a terminal on standard input; for scripts and pipes use dsh run "task" (or dsh run - to read the task from standard input)`}
	}
	opts, err := sf.conversation(e)
	if err != nil {
		return err
	}
	opts.showHistory, opts.typedInput = true, true
	ch := &chat{
		e: e, out: e.stderr, scripted: *sf.scriptFile != "",
		opts: opts,
		in:   newLineReader(e.stdin, e.stderr),
	}
	// Approval questions are answered through the chat's own line reader: a prompter that
	// read standard input on a goroutine of its own would take the chat's next message.
	if !opts.approveFromWeb {
		ch.opts.prompter = &chatPrompter{ch: ch}
	}
	// Interrupts cancel the running turn; at the prompt the terminal is in raw mode and
	// Ctrl-C arrives as a key instead.
	ch.sig = make(chan os.Signal, 1)
	signal.Notify(ch.sig, os.Interrupt)
	defer signal.Stop(ch.sig)
	if ch.cv, err = openConversation(ctx, e, ch.opts); err != nil {
		return err
	}
	ch.r = ch.cv.r
	fmt.Fprintln(ch.out, ch.r.Dim("/help for commands · Ctrl-C stops a turn · Ctrl-D quits"))
	err = ch.loop(ctx)
	if cerr := ch.closeSession(); err == nil {
		err = cerr
	}
	return err
}

// chat is the state of the interactive loop.
type chat struct {
	e        *env
	out      io.Writer
	r        term.Renderer
	opts     convOptions
	cv       *conversation
	in       *lineReader
	sig      chan os.Signal
	scripted bool
	// cancelTurn cancels the running turn (nil between turns); Ctrl-C at an approval
	// question, where the terminal is in raw mode, uses it.
	mu         sync.Mutex
	cancelTurn context.CancelFunc
}

// errQuit ends the loop normally.
var errQuit = errors.New("quit")

func (ch *chat) loop(ctx context.Context) error {
	interrupted := false // the last input was a Ctrl-C
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		text, err := ch.in.read("› ")
		switch {
		case errors.Is(err, errInterrupt):
			if interrupted {
				return nil
			}
			interrupted = true
			fmt.Fprintln(ch.out, ch.r.Dim("(Ctrl-C again or Ctrl-D to quit)"))
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
		interrupted = false
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		if strings.HasPrefix(text, "/") {
			if err := ch.command(ctx, text); errors.Is(err, errQuit) {
				return nil
			} else if err != nil {
				fmt.Fprintln(ch.out, ch.r.Red(term.Sanitize(err.Error())))
			}
			continue
		}
		ch.turn(ctx, text)
	}
}

// turn runs one turn; an interrupt cancels it (the turn ends "aborted", the chat goes on).
func (ch *chat) turn(ctx context.Context, text string) {
	for drained := false; !drained; {
		select {
		case <-ch.sig: // an interrupt from before this turn
		default:
			drained = true
		}
	}
	turnCtx, cancel := context.WithCancel(ctx)
	ch.mu.Lock()
	ch.cancelTurn = cancel
	ch.mu.Unlock()
	defer func() {
		ch.mu.Lock()
		ch.cancelTurn = nil
		ch.mu.Unlock()
	}()
	done := make(chan struct{})
	go func() {
		select {
		case <-ch.sig:
			cancel()
		case <-done:
		}
	}()
	_, err := ch.cv.turn(turnCtx, text)
	close(done)
	cancel()
	// The transcript's turn/end line says how the turn ended; only failures to run one at
	// all are reported here.
	if err != nil && ch.cv.lastEnd == "" {
		fmt.Fprintln(ch.out, ch.r.Red(term.Sanitize(err.Error())))
	}
}

// command runs a slash command.
func (ch *chat) command(ctx context.Context, line string) error {
	name, arg, _ := strings.Cut(strings.TrimPrefix(line, "/"), " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "help", "?":
		fmt.Fprint(ch.out, chatHelp)
	case "quit", "exit", "q":
		return errQuit
	case "model":
		return ch.setModel(arg)
	case "mode":
		return ch.setMode(arg)
	case "clear", "new":
		return ch.switchTo(ctx, "")
	case "resume":
		if arg == "" {
			return ch.listSessions(ctx)
		}
		return ch.switchTo(ctx, arg)
	case "usage":
		ch.showUsage()
	default:
		hint := ""
		if s := suggest.Closest(name, chatCommands); s != "" {
			hint = fmt.Sprintf(" (did you mean /%s?)", s)
		}
		fmt.Fprintln(ch.out, ch.r.Yellow(term.Sanitize(fmt.Sprintf("unknown command /%s%s; /help lists the commands", name, hint))))
	}
	return nil
}

func (ch *chat) setModel(name string) error {
	if name == "" {
		fmt.Fprintf(ch.out, "model: %s\n", term.Sanitize(ch.cv.model.Name()))
		return nil
	}
	if ch.scripted {
		return errors.New("the scripted model (--script) replays a file; it cannot be switched")
	}
	m, banner, err := newModel(ch.opts.config, "", name)
	if err != nil {
		return err
	}
	ch.cv.model, ch.opts.model, ch.opts.banner = m, m, banner
	if err := ch.cv.newAgent(); err != nil {
		return err
	}
	fmt.Fprintf(ch.out, "model: %s (from the next turn on)\n", term.Sanitize(m.Name()))
	return nil
}

func (ch *chat) setMode(arg string) error {
	scope := ch.cv.a.Scope()
	if arg == "" {
		fmt.Fprintf(ch.out, "mode: %s\n", ch.cv.rt.reg.ModeFor(scope))
		return nil
	}
	mode := tool.Mode(arg)
	switch mode {
	case tool.ModeNative, tool.ModeCode, tool.ModeBoth:
	default:
		return fmt.Errorf("unknown mode %q: want native, code or both", arg)
	}
	if err := ch.cv.setMode(mode); err != nil {
		return err
	}
	fmt.Fprintf(ch.out, "mode: %s (from the next turn on)\n", mode)
	return nil
}

// switchTo closes the current session and opens another: a new one when id is "", else
// the stored session id names (its history is shown).
func (ch *chat) switchTo(ctx context.Context, id string) error {
	opts := ch.opts
	opts.resume, opts.continueLast = id, false
	if id != "" {
		full, err := resolveID(ctx, ch.cv.store, id)
		if err != nil {
			return err
		}
		if full == ch.cv.id {
			return fmt.Errorf("session %s is the current one", full)
		}
		opts.resume = full
	}
	mode := ch.cv.rt.reg.ModeFor(ch.cv.a.Scope())
	if err := ch.closeSession(); err != nil {
		fmt.Fprintln(ch.out, ch.r.Red(term.Sanitize(err.Error())))
	}
	cv, err := openConversation(ctx, ch.e, opts)
	if err != nil && id != "" {
		// Stay usable: fall back to a new session.
		fmt.Fprintln(ch.out, ch.r.Red(term.Sanitize(err.Error())))
		opts.resume = ""
		cv, err = openConversation(ctx, ch.e, opts)
	}
	if err != nil {
		return err
	}
	ch.cv = cv
	return ch.cv.setMode(mode)
}

// closeSession closes the current session, removing it when it holds nothing worth
// keeping, and says where a kept one is.
func (ch *chat) closeSession() error {
	cv := ch.cv
	if cv == nil {
		return nil
	}
	ch.cv = nil
	discard := cv.discardable()
	saved := cv.flog.Len() > 0 && !discard
	err := cv.close(discard)
	if saved {
		fmt.Fprintln(ch.out, ch.r.Dim(fmt.Sprintf("session %s saved · continue it with dsh --continue, or dsh --resume %s", cv.id, shortID(cv.id))))
	}
	return err
}

// listSessions prints this workspace's sessions, most recent last.
func (ch *chat) listSessions(ctx context.Context) error {
	all, err := listSessions(ctx, ch.cv.store)
	if err != nil {
		return err
	}
	var mine []sessionEntry
	for _, s := range all {
		if s.err == nil && s.sum.Cwd == ch.opts.workspace {
			mine = append(mine, s)
		}
	}
	if len(mine) == 0 {
		fmt.Fprintln(ch.out, "no saved sessions in this workspace")
		return nil
	}
	if len(mine) > 10 {
		mine = mine[len(mine)-10:]
	}
	tw := tabwriter.NewWriter(ch.out, 0, 4, 2, ' ', 0)
	for _, s := range mine {
		mark := " "
		if s.info.Header.ID == ch.cv.id {
			mark = "*"
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\n", mark, s.info.Header.ID, time.UnixMilli(s.sum.Updated).Local().Format("2006-01-02 15:04"), term.Sanitize(clip(s.sum.FirstPrompt, 50)))
	}
	tw.Flush()
	fmt.Fprintln(ch.out, ch.r.Dim("/resume ID continues one (a unique prefix will do)"))
	return nil
}

// showUsage prints the session's usage as its log records it: per turn, and the total
// with its estimated cost (as dsh run and dsh session show print it).
func (ch *chat) showUsage() {
	lines, err := usageLines(ch.cv.flog.Events(), ch.opts.config.Pricing)
	if err != nil {
		fmt.Fprintln(ch.out, ch.r.Red(term.Sanitize("usage: "+err.Error())))
		return
	}
	if len(lines) == 0 {
		fmt.Fprintln(ch.out, "no usage recorded in this session yet")
		return
	}
	for _, l := range lines {
		fmt.Fprintln(ch.out, term.Sanitize(l))
	}
}

// errInterrupt is Ctrl-C at the prompt.
var errInterrupt = errors.New("interrupt")

// lineReader reads the chat's input from a terminal: line editing and history by
// golang.org/x/term, multi-line input by a trailing backslash or a bracketed paste. The
// terminal is in raw mode only while a line is read, so turns (and approval prompts) see
// an ordinary terminal and Ctrl-C during a turn is a signal.
type lineReader struct {
	f   *os.File
	t   *xterm.Terminal
	spy *ctrlCSpy
}

// ctrlCSpy notes Ctrl-C bytes on their way to the line editor, which reports Ctrl-C and
// Ctrl-D alike as io.EOF.
type ctrlCSpy struct {
	r    io.Reader
	w    io.Writer
	seen bool
}

func (s *ctrlCSpy) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if bytes.IndexByte(p[:n], 3) >= 0 {
		s.seen = true
	}
	return n, err
}

func (s *ctrlCSpy) Write(p []byte) (int, error) { return s.w.Write(p) }

func newLineReader(in *os.File, out io.Writer) *lineReader {
	spy := &ctrlCSpy{r: in, w: out}
	return &lineReader{f: in, t: xterm.NewTerminal(spy, ""), spy: spy}
}

// read reads one message: lines ending in a backslash and pasted lines continue it. It
// returns errInterrupt for Ctrl-C (dropping what was typed) and io.EOF for Ctrl-D on an
// empty line.
func (lr *lineReader) read(prompt string) (string, error) {
	return lr.readLines(prompt, true)
}

// readLines reads one line, or with multi a message of several (see read).
func (lr *lineReader) readLines(prompt string, multi bool) (string, error) {
	fd := int(lr.f.Fd())
	state, err := xterm.MakeRaw(fd)
	if err != nil {
		return "", fmt.Errorf("terminal: %w", err)
	}
	defer xterm.Restore(fd, state)
	if w, _, err := xterm.GetSize(fd); err == nil && w > 0 {
		lr.t.SetSize(w, 24)
	}
	lr.t.SetBracketedPasteMode(true)
	defer lr.t.SetBracketedPasteMode(false)
	var lines []string
	p := prompt
	for {
		lr.t.SetPrompt(p)
		lr.spy.seen = false
		line, err := lr.t.ReadLine()
		pasted := errors.Is(err, xterm.ErrPasteIndicator)
		if err != nil && !pasted {
			if errors.Is(err, io.EOF) && lr.spy.seen {
				lr.spy.w.Write([]byte("^C\r\n"))
				// The line editor keeps the bytes it returned on (the Ctrl-C among them)
				// and the line typed so far: a fresh one, with the same history, drops them.
				history := lr.t.History
				lr.t = xterm.NewTerminal(lr.spy, "")
				lr.t.History = history
				return "", errInterrupt
			}
			if errors.Is(err, io.EOF) {
				lr.spy.w.Write([]byte("\r\n"))
			}
			return "", err
		}
		if !multi {
			return line, nil
		}
		if !pasted && strings.HasSuffix(line, `\`) {
			lines = append(lines, strings.TrimSuffix(line, `\`))
			p = "… "
			continue
		}
		lines = append(lines, line)
		if pasted {
			p = "… "
			continue
		}
		return strings.TrimRight(strings.Join(lines, "\n"), "\n"), nil
	}
}

// chatPrompter asks approval questions in the chat: the question as the terminal prompter
// words it, the answer read by the chat's line reader. Ctrl-C at the question cancels the
// turn. Questions are asked one at a time. The answer is read in raw mode, where no
// interrupt signal arrives, so a question waits for its answer (or Ctrl-C, or Ctrl-D:
// unavailable) even when the turn is cancelled some other way.
type chatPrompter struct {
	ch *chat
	mu sync.Mutex
}

// Prompt asks q and reads the answer, taking the terminal prompter's answers: y, n, f (no,
// with a line for the model), a (always, this session) and s (save an allow rule to the
// user's configuration).
func (p *chatPrompter) Prompt(ctx context.Context, q approval.Question) (approval.Reply, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ctx.Err() != nil {
		return approval.Reply{Outcome: tool.ApprovalCancelled}, nil
	}
	r, out := p.ch.r, p.ch.out
	userConfig := ""
	if p.ch.opts.config != nil {
		userConfig = p.ch.opts.config.user
	}
	canSave := userConfig != ""
	fmt.Fprint(out, approval.FormatQuestion(q))
	prompt := approval.AnswerPrompt(q, canSave, false)
	feedback := false
	for {
		answer, err := p.ch.in.readLines(prompt, false)
		switch {
		case errors.Is(err, errInterrupt):
			p.ch.mu.Lock()
			if p.ch.cancelTurn != nil {
				p.ch.cancelTurn()
			}
			p.ch.mu.Unlock()
			return approval.Reply{Outcome: tool.ApprovalCancelled}, nil
		case err != nil:
			return approval.Reply{Outcome: tool.ApprovalUnavailable}, nil
		}
		if feedback {
			msg := strings.TrimSpace(answer)
			told := ""
			if msg != "" {
				told = r.Dim(", the model is told why")
			}
			fmt.Fprintln(out, r.Red("✗ rejected")+told)
			return approval.Reply{Outcome: tool.ApprovalRejected, Feedback: msg}, nil
		}
		switch strings.ToLower(strings.TrimSpace(answer)) {
		case "y", "yes":
			fmt.Fprintln(out, r.Green("✓ allowed once"))
			return approval.Reply{Outcome: tool.ApprovalAllowedOnce}, nil
		case "n", "no":
			fmt.Fprintln(out, r.Red("✗ rejected"))
			return approval.Reply{Outcome: tool.ApprovalRejected}, nil
		case "f", "feedback":
			prompt, feedback = "Tell the model why (one line): ", true
			continue
		case "a", "always":
			fmt.Fprintln(out, r.Green("✓ allowed for this session"))
			return approval.Reply{Outcome: tool.ApprovalAllowedOnce, Always: true}, nil
		case "s", "save":
			if !canSave {
				break
			}
			rule, ok := q.AllowRule()
			if !ok {
				fmt.Fprintln(out, "This call cannot be saved as a rule (its argument is empty, relative or holds a \"*\"); answer a to allow it for this session.")
				break
			}
			if err := approval.AddAllowRule(userConfig, rule); err != nil {
				fmt.Fprintln(out, term.Sanitize(fmt.Sprintf("Could not save the rule: %v", err)))
				break
			}
			fmt.Fprintln(out, r.Green("✓ allowed")+term.Sanitize(fmt.Sprintf(" — saved allow rule %q to %s", rule, userConfig)))
			return approval.Reply{Outcome: tool.ApprovalAllowedOnce, Always: true, Saved: rule}, nil
		}
		prompt = approval.AnswerPrompt(q, canSave, true)
	}
}

// clip shortens s to one line of at most n characters.
func clip(s string, n int) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
