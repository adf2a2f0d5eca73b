package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// State is the connection state of a mount.
type State string

// Mount states.
const (
	// StateConnecting: a connection attempt (connect, initialize, first tool sync) is running.
	StateConnecting State = "connecting"
	// StateConnected: the server is connected and its tools are registered.
	StateConnected State = "connected"
	// StateReconnecting: the connection was lost or an attempt failed; the next attempt
	// waits for its backoff delay. The last tool generation stays registered, failing.
	StateReconnecting State = "reconnecting"
	// StateDisconnected: the connection is down and reconnecting is disabled; the last tool
	// generation stays registered, failing.
	StateDisconnected State = "disconnected"
	// StateFailed: reconnecting gave up; the server's tools are unregistered.
	StateFailed State = "failed"
	// StateClosed: the mount was closed.
	StateClosed State = "closed"
)

// Mount is one mounted MCP server: a supervisor that connects it, keeps its tools in sync
// with the registry and reconnects with backoff after a loss (docs/behaviour.md §13). Create one with
// Host.Mount.
type Mount struct {
	host   *Host
	name   string
	label  string // "mcp-client(<name>)"
	cfg    ServerConfig
	set    settings
	log    *slog.Logger
	stderr *tailBuffer
	notes  *noteLog

	ctx    context.Context // the supervisor's lifetime
	cancel context.CancelFunc
	done   chan struct{} // closed when the supervisor has returned
	resync chan struct{} // a pending tools/list_changed, coalesced

	mu          sync.Mutex
	state       State
	lastErr     error
	gen         *generation // the live generation, nil while down
	tools       []ToolInfo
	unregister  []func()
	slots       []*toolSlot // parallel to tools: what each registration runs
	attempts    int         // consecutive failed attempts in the current outage
	connectedAt time.Time   // when the live generation finished its first sync

	closeOnce sync.Once
	settled   chan struct{} // closed when the first connection attempt has ended
}

// generation is one connection: the SDK session over one transport connection.
type generation struct {
	session *sdk.ClientSession
	conn    *captureConn // nil for streamable HTTP, whose results are captured per request
	closed  chan struct{}
	reason  string // why it closed, set before closed is closed
}

// take returns the captured result of slot and stops waiting for it.
func (g *generation) take(slot *capture) json.RawMessage {
	if g.conn != nil {
		return g.conn.take(slot)
	}
	return slot.result()
}

func (g *generation) isClosed() bool {
	select {
	case <-g.closed:
		return true
	default:
		return false
	}
}

func newMount(h *Host, name string, cfg ServerConfig, set settings) *Mount {
	ctx, cancel := context.WithCancel(context.Background())
	return &Mount{
		host:    h,
		name:    name,
		label:   label(name),
		cfg:     cfg,
		set:     set,
		log:     h.opts.Logger,
		stderr:  newTailBuffer(h.opts.StderrLimit),
		notes:   &noteLog{limit: 100},
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		resync:  make(chan struct{}, 1),
		settled: make(chan struct{}),
		state:   StateConnecting,
	}
}

// Settled returns a channel closed once the first connection attempt (connect, initialize,
// first tool sync) has ended, connected or not, so a caller can wait for it without polling.
func (m *Mount) Settled() <-chan struct{} { return m.settled }

// Name returns the server name.
func (m *Mount) Name() string { return m.name }

// Config returns the server's declaration.
func (m *Mount) Config() ServerConfig { return m.cfg }

// Transport returns TransportStdio or TransportStreamableHTTP.
func (m *Mount) Transport() string { return m.set.transport }

// State returns the connection state.
func (m *Mount) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// Err returns the last connection or sync error, or nil.
func (m *Mount) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastErr
}

// Tools returns the registered tools of the current generation, in the server's order.
func (m *Mount) Tools() []ToolInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ToolInfo(nil), m.tools...)
}

// Stderr returns the retained tail of a stdio server's standard error (bounded by
// Options.StderrLimit) and how many earlier bytes were dropped.
func (m *Mount) Stderr() ([]byte, int64) { return m.stderr.Bytes() }

// Notes returns the most recent protocol diagnostics (at most 100), oldest first: skipped
// malformed or oversized messages, discarded oversized responses, late answers to abandoned
// calls.
func (m *Mount) Notes() []string { return m.notes.all() }

func (m *Mount) note(s string) {
	m.notes.add(s)
	m.log.Warn(m.label + ": " + s)
}

// Close stops reconnecting, closes the connection (stopping a stdio server), waits for the
// supervisor to finish and unregisters the server's tools. It is idempotent.
func (m *Mount) Close() error {
	m.closeOnce.Do(func() {
		m.cancel()
		<-m.done
		m.mu.Lock()
		undo := m.unregister
		m.unregister, m.tools, m.slots = nil, nil, nil
		m.state = StateClosed
		m.mu.Unlock()
		for _, u := range undo {
			u()
		}
		m.host.forget(m)
	})
	return nil
}

// start launches the supervisor and waits for the first attempt to settle.
func (m *Mount) start(ctx context.Context) error {
	first := make(chan error, 1)
	go m.supervise(first)
	select {
	case err := <-first:
		if err != nil && m.cfg.FailOnStartupError {
			return fmt.Errorf("%s: initial connection or tool synchronization failed: %w", m.label, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: waiting for the first connection: %w", m.label, context.Cause(ctx))
	}
}

// supervise owns the connection: it connects, syncs, serves re-sync requests and reconnects
// per the policy until the mount closes or reconnecting stops. It reports the outcome of the
// first attempt on first.
func (m *Mount) supervise(first chan<- error) {
	defer close(m.done)
	startup := true
	for {
		m.setState(StateConnecting)
		gen, err := m.connect()
		if err == nil {
			m.drainResync()
			if err = m.sync(gen, startup); err != nil {
				gen.session.Close()
				<-gen.closed
			}
		}
		if err == nil {
			m.up(gen)
		} else if m.ctx.Err() == nil {
			m.fail(err)
			m.log.Warn(fmt.Sprintf("%s: connection attempt failed: %v", m.label, err))
		}
		if startup {
			// Settled closes before start learns the outcome, so that it is closed
			// whenever Mount has returned.
			close(m.settled)
			first <- err
			startup = false
			if err != nil && m.cfg.FailOnStartupError {
				return
			}
		}
		if m.ctx.Err() != nil {
			if err == nil {
				gen.session.Close()
				<-gen.closed
			}
			return
		}
		if err != nil {
			if !m.backoff(false) {
				return
			}
			continue
		}
		if !m.serve(gen) {
			return
		}
		m.down(gen)
		if !m.backoff(true) {
			return
		}
	}
}

// setState moves the mount to s, unless it was closed: a closed mount stays closed.
func (m *Mount) setState(s State) {
	m.mu.Lock()
	if m.state != StateClosed {
		m.state = s
	}
	m.mu.Unlock()
}

func (m *Mount) fail(err error) {
	m.mu.Lock()
	m.lastErr = err
	m.mu.Unlock()
}

func (m *Mount) up(gen *generation) {
	m.mu.Lock()
	m.gen = gen
	m.state = StateConnected
	m.connectedAt = m.host.opts.Now()
	m.lastErr = nil
	attempts := m.attempts
	m.mu.Unlock()
	if attempts > 0 {
		m.log.Info(fmt.Sprintf("%s: reconnected and re-synced tools (attempt %d/%d)", m.label, attempts, m.set.reconnect.MaxAttempts))
	}
}

func (m *Mount) down(gen *generation) {
	m.mu.Lock()
	if m.gen == gen {
		m.gen = nil
	}
	m.lastErr = errors.New(gen.reason)
	m.mu.Unlock()
}

// serve runs while gen is up, re-syncing on list_changed. It returns false when the mount
// is closing (after closing gen), true when gen was lost.
func (m *Mount) serve(gen *generation) bool {
	for {
		select {
		case <-gen.closed:
			return true
		case <-m.resync:
			m.log.Info(m.label + ": tool list changed, re-syncing")
			if err := m.sync(gen, false); err != nil && m.ctx.Err() == nil {
				m.fail(err)
				m.log.Error(fmt.Sprintf("%s: tool re-sync failed: %v", m.label, err))
			}
		case <-m.ctx.Done():
			gen.session.Close()
			<-gen.closed
			return false
		}
	}
}

func (m *Mount) drainResync() {
	select {
	case <-m.resync:
	default:
	}
}

// backoff applies the reconnect policy after a failed attempt or a lost connection
// (lost is true) and waits for the next attempt. It returns false when no attempt follows.
func (m *Mount) backoff(lost bool) bool {
	p := m.set.reconnect
	if !p.Enabled {
		msg := "connection failed and reconnect is disabled — no tools were registered; close and mount the server again to connect"
		if lost {
			msg = "connection lost and reconnect is disabled — registered tools will fail until the server is mounted again"
		}
		m.log.Error(m.label + ": " + msg)
		m.setState(StateDisconnected)
		<-m.ctx.Done()
		return false
	}
	m.mu.Lock()
	if lost && m.host.opts.Now().Sub(m.connectedAt) >= p.MaxDelay {
		// The connection outlived the longest backoff spacing: the outage is new.
		m.attempts = 0
	}
	m.attempts++
	attempt := m.attempts
	var undo []func()
	if attempt > p.MaxAttempts {
		undo = m.unregister
		m.unregister, m.tools, m.slots = nil, nil, nil
	} else {
		m.state = StateReconnecting
	}
	m.mu.Unlock()
	if attempt > p.MaxAttempts {
		for _, u := range undo {
			u()
		}
		m.log.Error(fmt.Sprintf("%s: giving up after %d consecutive failed reconnect attempts — tools unregistered; close and mount the server again to reconnect", m.label, p.MaxAttempts))
		// Failed is reported last, once the tools are gone and the reason is logged, so
		// whoever sees the state sees its consequences too.
		m.setState(StateFailed)
		<-m.ctx.Done()
		return false
	}
	delay := p.Delay(attempt)
	action := "connection failed; retrying"
	if lost {
		action = "connection lost; reconnecting"
	}
	m.log.Warn(fmt.Sprintf("%s: %s in %dms (attempt %d/%d)", m.label, action, delay.Milliseconds(), attempt, p.MaxAttempts))
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-m.ctx.Done():
		return false
	}
}

// connect opens one generation: a fresh transport and SDK session, initialized within the
// startup timeout.
func (m *Mount) connect() (*generation, error) {
	opts := m.host.opts
	var inner sdk.Transport
	switch m.set.transport {
	case TransportStdio:
		inner = &stdioTransport{
			command: m.cfg.Command,
			args:    m.cfg.Args,
			env:     ChildEnv(opts.Environ, m.cfg.Env),
			dir:     m.cfg.Cwd,
			limit:   opts.MaxMessageBytes,
			grace:   opts.ShutdownGrace,
			stderr:  m.stderrSink(),
			lastErr: m.lastStderrLine,
			note:    m.note,
		}
	default:
		inner = &sdk.StreamableClientTransport{
			Endpoint:   m.cfg.URL,
			HTTPClient: m.httpClient(),
			MaxRetries: -1, // the mount's own reconnect policy owns retrying
		}
	}
	if opts.Transport != nil {
		if t := opts.Transport(m.name, m.cfg); t != nil {
			inner = t
		}
	}
	var transport sdk.Transport = inner
	ct := &captureTransport{inner: inner, note: m.note}
	if _, http := inner.(*sdk.StreamableClientTransport); !http {
		transport = ct
	}
	client := sdk.NewClient(opts.ClientInfo, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case m.resync <- struct{}{}:
			default:
			}
		},
	})
	client.AddSendingMiddleware(sendTrace)
	ctx, cancel := context.WithTimeout(m.ctx, m.set.startupTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, transport, &sdk.ClientSessionOptions{ProtocolVersion: opts.ProtocolVersion})
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded && m.ctx.Err() == nil {
			err = fmt.Errorf("the server did not complete initialization within %dms", m.set.startupTimeout.Milliseconds())
		}
		if ct.conn != nil {
			ct.conn.Close() // the SDK closes it too; closing twice is harmless
		}
		// The stdio transport's exit message may already carry the line; say it once.
		if last := m.lastStderrLine(); last != "" && m.set.transport == TransportStdio && !strings.Contains(err.Error(), last) {
			err = fmt.Errorf("%w (last stderr line: %s)", err, last)
		}
		return nil, err
	}
	gen := &generation{session: cs, conn: ct.conn, closed: make(chan struct{})}
	go func() {
		werr := cs.Wait()
		reason := "the connection closed"
		var lost *connLostError
		switch {
		case errors.As(werr, &lost):
			reason = lost.reason
		case werr != nil:
			reason = "the connection closed: " + werr.Error()
		}
		if m.ctx.Err() != nil {
			reason = "the mount was closed"
		}
		gen.reason = reason
		close(gen.closed)
	}()
	return gen, nil
}

// httpClient returns the client of a streamable HTTP server: the configured one with the
// declaration's headers added and results captured.
func (m *Mount) httpClient() *http.Client {
	c := &http.Client{}
	if base := m.host.opts.HTTPClient; base != nil {
		*c = *base
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	if len(m.cfg.Headers) > 0 {
		rt = headerTransport{base: rt, headers: m.cfg.Headers}
	}
	c.Transport = &captureRoundTripper{base: rt, limit: m.host.opts.MaxMessageBytes}
	return c
}

// headerTransport adds a server declaration's headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}

// lastStderrLine returns the last non-empty line of the server's stderr, at most 200 bytes.
func (m *Mount) lastStderrLine() string {
	b, _ := m.stderr.Bytes()
	b = bytes.TrimRight(b, "\r\n\t ")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return excerpt(b)
}
