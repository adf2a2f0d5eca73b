// Package viewer is dsh's session viewer: a web server that lists the sessions of a store
// and renders each one with the cards a terminal shows (tool calls and results, diffs side
// by side, search and shell output, Code Mode runs with their sub-calls, approvals, turn
// ends), following a live session as its log grows (server-sent events) and answering its
// pending approval questions when the session listens for answers (see
// approval.Channel).
//
// Everything a session holds is treated as hostile: text is HTML-escaped and cleaned of
// control characters (ANSI escapes show as inert "^[" text), only http and https URLs
// become links, and every response carries a strict Content-Security-Policy that allows no
// inline script. Without a token the server answers only requests addressed to a loopback
// host name (DNS rebinding cannot reach it); with one, every request must carry it.
package viewer

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/dsh-go/dsh/internal/term"
	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

//go:embed templates/*.html static/*
var assets embed.FS

// ContentSecurityPolicy is the policy every response carries: nothing but the viewer's own
// script, style sheet and images, no framing, no inline script or style.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// TokenCookie is the cookie that carries the access token once a URL with ?token= opened
// the viewer.
const TokenCookie = "dsh_viewer_token"

// DefaultPoll is how often a live session's log is checked for new events.
const DefaultPoll = 250 * time.Millisecond

// maxForm bounds the body of an approval answer.
const maxForm = 64 << 10

// Options configures a Server.
type Options struct {
	// Store holds the sessions shown.
	Store session.Store
	// Definition returns the definition presenting a tool's cards (nil: the generic card),
	// as the terminal transcript uses; nil shows every call with the generic card.
	Definition func(name string) *tool.Definition
	// Token, when set, must accompany every request (the ?token= query parameter, or the
	// cookie it sets); it is for addresses other than loopback.
	Token string
	// Poll is how often a followed session is checked for new events (default
	// DefaultPoll). A store that is not a session.Watcher is reloaded instead, less often
	// while nothing changes (up to MaxBackoff).
	Poll time.Duration
	// Approvals is the directory of the approval sockets of the sessions running on this
	// machine (approval.SocketDir of the dsh home); empty, no question can be answered
	// from the page.
	Approvals string
	// PageSize is how many sessions one list page shows (default DefaultPageSize).
	PageSize int
}

// DefaultPageSize is how many sessions a list page shows unless Options.PageSize says
// otherwise.
const DefaultPageSize = 50

// MaxBackoff bounds how long a followed session of a store without session.Watcher goes
// unchecked while it does not change.
const MaxBackoff = 4 * time.Second

// Server serves the viewer. It is an http.Handler; its live streams end with their
// request's context.
type Server struct {
	opts Options
	mux  *http.ServeMux
	tmpl *template.Template
	csrf string // the secret every approval form carries
	rows rowCache
}

// New returns a viewer over opts.Store.
func New(opts Options) (*Server, error) {
	if opts.Store == nil {
		return nil, errors.New("viewer: Options.Store is nil")
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("viewer: %w", err)
	}
	t, err := template.New("viewer").Funcs(funcs).ParseFS(assets, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("viewer: templates: %w", err)
	}
	s := &Server{opts: opts, tmpl: t, csrf: hex.EncodeToString(secret), rows: rowCache{m: map[string]cachedRow{}}}
	static, err := fs.Sub(assets, "static")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.list)
	mux.HandleFunc("GET /session/{id}", s.session)
	mux.HandleFunc("GET /session/{id}/events", s.events)
	mux.HandleFunc("POST /session/{id}/approve", s.approve)
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, http.StatusNotFound, fmt.Errorf("no page at %s", r.URL.Path))
	})
	s.mux = mux
	return s, nil
}

// NewToken returns a fresh random access token.
func NewToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// ServeHTTP applies the security headers and access checks, then serves the page.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if s.opts.Token == "" && !loopbackHost(r.Host) {
		s.fail(w, http.StatusForbidden, fmt.Errorf("this viewer answers only requests to localhost, 127.0.0.1 or [::1], not %q", r.Host))
		return
	}
	if s.opts.Token != "" {
		if q := r.URL.Query().Get("token"); q != "" {
			if !s.tokenOK(q) {
				s.fail(w, http.StatusUnauthorized, errors.New("wrong token: use the URL dsh session serve printed when it started"))
				return
			}
			http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			if r.Method == http.MethodGet {
				u := *r.URL
				v := u.Query()
				v.Del("token")
				u.RawQuery = v.Encode()
				http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
				return
			}
		} else if c, err := r.Cookie(TokenCookie); err != nil || !s.tokenOK(c.Value) {
			s.fail(w, http.StatusUnauthorized, errors.New("this viewer needs its token: open the URL dsh session serve printed when it started"))
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) tokenOK(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.Token)) == 1
}

// loopbackHost reports whether a Host header names this machine's loopback interface.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// fail writes an error page.
func (s *Server) fail(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	s.tmpl.ExecuteTemplate(w, "error", map[string]any{"Code": code, "Status": http.StatusText(code), "Message": err.Error()})
}

// render executes a page template into a buffer first, so a failure is an error page
// rather than half a page.
func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		s.fail(w, http.StatusInternalServerError, fmt.Errorf("rendering %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(b.String()))
}

func when(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).Local().Format("2006-01-02 15:04:05")
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// loadedSession is a session as the viewer shows it.
type loadedSession struct {
	*session.Loaded
	Live bool // another process has the log open for writing
}

// status says how a session stands: live while its writer runs, else how its last turn
// ended.
func (l *loadedSession) status(sum session.Summary) string {
	switch {
	case l.Live:
		return "live"
	case sum.Turns == 0:
		return "empty"
	case sum.LastEnd.Kind == "":
		return "open"
	}
	return sum.LastEnd.Kind
}

// held reports whether a writer holds the session now: the store's session.Watcher says;
// a store without one shows every session as it stands.
func (s *Server) held(ctx context.Context, id string) bool {
	w, ok := s.opts.Store.(session.Watcher)
	if !ok {
		return false
	}
	a, err := w.Activity(ctx, id)
	return err == nil && a.Held
}

// load reads a session. A live session's open turn is not closed with recovery events:
// its writer is still working on it.
func (s *Server) load(ctx context.Context, id string) (*loadedSession, error) {
	return s.loadAs(ctx, id, s.held(ctx, id))
}

// loadAs reads a session whose writer's presence is known.
func (s *Server) loadAs(ctx context.Context, id string, live bool) (*loadedSession, error) {
	l, err := s.opts.Store.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	ls := &loadedSession{Loaded: l, Live: live}
	if ls.Live && l.Recovered > 0 {
		ls.Events = l.Events[:len(l.Events)-l.Recovered]
		ls.Recovered = 0
	}
	return ls, nil
}

// lookup resolves the {id} of a request to a loaded session, writing the error page when
// there is none.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (*loadedSession, bool) {
	id := r.PathValue("id")
	full, err := s.opts.Store.Resolve(r.Context(), id)
	var amb *session.AmbiguousError
	switch {
	case errors.Is(err, session.ErrNotFound):
		s.fail(w, http.StatusNotFound, fmt.Errorf("no session %q in %s", id, s.opts.Store.Root()))
		return nil, false
	case errors.As(err, &amb):
		s.fail(w, http.StatusBadRequest, err)
		return nil, false
	case err != nil && strings.Contains(err.Error(), "invalid id"):
		s.fail(w, http.StatusBadRequest, err)
		return nil, false
	case err != nil:
		s.fail(w, http.StatusInternalServerError, err)
		return nil, false
	}
	ls, err := s.load(r.Context(), full)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err)
		return nil, false
	}
	return ls, true
}

// socket returns the approval socket of session id, "" when the page answers no
// questions.
func (s *Server) socket(id string) string {
	if s.opts.Approvals == "" {
		return ""
	}
	p, err := approval.SocketPath(s.opts.Approvals, id)
	if err != nil {
		return ""
	}
	return p
}

// canAnswer reports whether a session takes approval answers from outside: it is live
// and its approval socket exists.
func (s *Server) canAnswer(ls *loadedSession) bool {
	if !ls.Live {
		return false
	}
	p := s.socket(ls.Header.ID)
	if p == "" {
		return false
	}
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// items renders a session's events, nesting Code Mode sub-calls in their run_code card and
// marking the approval questions still waiting.
func (s *Server) items(ls *loadedSession) []item {
	rd := newRenderer(s.opts.Definition)
	decided := map[string]bool{}
	for _, e := range ls.Events {
		if e.Type == session.TypeApprovalDecided {
			if p, err := session.DecodeApprovalDecided(e); err == nil {
				decided[p.ID] = true
			}
		}
	}
	answer := s.canAnswer(ls)
	var top []item
	calls := map[string]int{} // call id → index in top
	for i, e := range ls.Events {
		it, ok := rd.event(i, e)
		if !ok {
			continue
		}
		if it.Kind == "asked" {
			if decided[it.ID] || !ls.Live {
				it.Reply = nil
			} else {
				it.Reply.CanAnswer, it.Reply.Session, it.Reply.CSRF = answer, ls.Header.ID, s.csrf
			}
		}
		if it.Kind == "sub" {
			if at, ok := calls[it.Parent]; ok {
				top[at].Subs = append(top[at].Subs, it)
				continue
			}
			if at, ok := calls[it.Root]; ok {
				top[at].Subs = append(top[at].Subs, it)
				continue
			}
		}
		if it.Kind == "call" {
			calls[it.ID] = len(top)
		}
		top = append(top, it)
	}
	return top
}

// session serves one session's page.
func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	ls, ok := s.lookup(w, r)
	if !ok {
		return
	}
	sum := session.Summarize(ls.Header, ls.Events)
	u, uerr := session.UsageOf(ls.Events)
	data := map[string]any{
		"ID": ls.Header.ID, "Header": ls.Header, "Summary": sum, "Created": when(ls.Header.CreatedAt),
		"Updated": when(sum.Updated), "Status": ls.status(sum), "Live": ls.Live, "Usage": u, "Items": s.items(ls),
		"Next": len(ls.Events), "Recovered": ls.Recovered, "Torn": ls.TornBytes,
		"AnswerHere": s.canAnswer(ls),
	}
	if uerr != nil {
		data["UsageError"] = uerr.Error()
	}
	s.render(w, "session", data)
}

// approve forwards an approval answer from the page to the running session.
func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		if u, err := url.Parse(o); err != nil || u.Host != r.Host {
			s.fail(w, http.StatusForbidden, fmt.Errorf("an answer from another site (%q) is refused", o))
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		s.fail(w, http.StatusBadRequest, fmt.Errorf("reading the answer: %w", err))
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
		s.fail(w, http.StatusForbidden, errors.New("the answer did not come from this viewer's page (reload the page and answer again)"))
		return
	}
	a := approval.ChannelAnswer{CallID: r.PostForm.Get("callId"), Decision: r.PostForm.Get("decision"), Reason: r.PostForm.Get("reason")}
	if a.Decision == approval.DecisionYes {
		a.Reason = "" // the form's reason box is for a rejection
	}
	if err := a.Check(); err != nil {
		s.fail(w, http.StatusBadRequest, err)
		return
	}
	ls, ok := s.lookup(w, r)
	if !ok {
		return
	}
	if !s.canAnswer(ls) {
		s.fail(w, http.StatusConflict, fmt.Errorf("session %s takes no answers from this page: it is not running, or was not started with --approve-from web", ls.Header.ID))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if err := approval.SendAnswer(ctx, s.socket(ls.Header.ID), a); err != nil {
		s.fail(w, http.StatusConflict, err)
		return
	}
	http.Redirect(w, r, "/session/"+url.PathEscape(ls.Header.ID), http.StatusSeeOther)
}

// streamed is one server-sent event of a followed session: the HTML of one new event and
// where it goes.
type streamed struct {
	HTML     string `json:"html"`
	Parent   string `json:"parent,omitempty"`
	Root     string `json:"root,omitempty"`
	Answered string `json:"answered,omitempty"` // the approval question this event decides
}

// events streams a session's new events as server-sent events ("ev", with the event's
// index as its id) and its state ("status"), from the index in ?from= or the
// Last-Event-ID of a reconnecting stream, until the client goes away.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	ls, ok := s.lookup(w, r)
	if !ok {
		return
	}
	from := 0
	if v := r.URL.Query().Get("from"); v != "" {
		n, err := parseIndex(v)
		if err != nil {
			s.fail(w, http.StatusBadRequest, fmt.Errorf("from: %w", err))
			return
		}
		from = n
	}
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		if n, err := parseIndex(v); err == nil {
			from = n + 1
		}
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		s.fail(w, http.StatusInternalServerError, errors.New("this connection cannot stream"))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl.Flush()

	ctx := r.Context()
	rd := newRenderer(s.opts.Definition)
	for i := 0; i < min(from, len(ls.Events)); i++ {
		rd.event(i, ls.Events[i]) // the page has these: learn their calls
	}
	id := ls.Header.ID
	watcher, watched := s.opts.Store.(session.Watcher)
	var mark int64 = -1
	live := !ls.Live // differs: the first status is sent
	lastErr := ""
	failure := func(err error) {
		if err.Error() != lastErr {
			lastErr = err.Error()
			writeSSE(w, "failure", "", map[string]string{"error": lastErr})
			fl.Flush()
		}
	}
	wait := s.opts.Poll
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		changed := true
		if watched {
			a, err := watcher.Activity(ctx, id)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				failure(err)
				timer.Reset(wait)
				continue
			}
			changed = a.Mark != mark || a.Held != live
			mark = a.Mark
		}
		sent := 0
		if changed {
			next, err := s.load(ctx, id)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				failure(err)
			} else {
				lastErr = ""
				sent = s.send(w, rd, next, from)
				from = max(from, len(next.Events))
				if next.Live != live {
					live = next.Live
					sum := session.Summarize(next.Header, next.Events)
					writeSSE(w, "status", "", map[string]any{"live": live, "status": next.status(sum)})
					sent++
				}
				fl.Flush()
			}
		}
		// A store that cannot say when a session changed is reloaded less often while it
		// does not.
		if !watched {
			if sent == 0 {
				wait = min(2*wait, max(MaxBackoff, s.opts.Poll))
			} else {
				wait = s.opts.Poll
			}
		}
		timer.Reset(wait)
	}
}

// send writes the events of next from index from on as server-sent events and returns
// how many it wrote.
func (s *Server) send(w http.ResponseWriter, rd *renderer, next *loadedSession, from int) int {
	id := next.Header.ID
	answer := s.canAnswer(next)
	n := 0
	for i := from; i < len(next.Events); i++ {
		it, ok := rd.event(i, next.Events[i])
		if !ok {
			continue
		}
		if it.Kind == "asked" {
			it.Reply.CanAnswer, it.Reply.Session, it.Reply.CSRF = answer, id, s.csrf
		}
		var b strings.Builder
		if err := s.tmpl.ExecuteTemplate(&b, "item", it); err != nil {
			b.Reset()
			b.WriteString(template.HTMLEscapeString(err.Error()))
		}
		m := streamed{HTML: b.String(), Parent: it.Parent, Root: it.Root}
		if it.Kind == "decided" {
			m.Answered = it.ID
		}
		writeSSE(w, "ev", fmt.Sprint(i), m)
		n++
	}
	return n
}

func parseIndex(v string) (int, error) {
	var n int
	if _, err := fmt.Sscanf(v, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != v {
		return 0, fmt.Errorf("want a non-negative event index, got %q", v)
	}
	return n, nil
}

// writeSSE writes one server-sent event with a JSON payload (one line: JSON escapes line
// breaks).
func writeSSE(w http.ResponseWriter, event, id string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	var sb strings.Builder
	if id != "" {
		sb.WriteString("id: " + id + "\n")
	}
	sb.WriteString("event: " + event + "\ndata: ")
	sb.Write(b)
	sb.WriteString("\n\n")
	w.Write([]byte(sb.String()))
}

// funcs are the templates' helpers. clean is applied to every text from a session.
var funcs = template.FuncMap{
	"clean":     term.Sanitize,
	"summary":   resultSummary,
	"output":    terminalOutput,
	"raw":       rawInput,
	"text":      textOf,
	"safeURL":   safeURL,
	"plural":    plural,
	"first":     firstLine,
	"unfence":   unfence,
	"multiline": func(s string) bool { return strings.Contains(strings.TrimSpace(s), "\n") },
	"sub1":      func(n int) int { return n - 1 },
	"pathID":    url.PathEscape,
}
