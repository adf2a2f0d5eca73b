package viewer

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/dsh-go/dsh/session"
)

// row is one session of the list.
type row struct {
	ID, Workspace, Created, Updated, FirstPrompt, Status, Client string
	Turns                                                        int
	Usage                                                        session.Tokens
	Err                                                          string
}

// cachedRow is a row of a session that had to be loaded to be summarized, kept while the
// session's log does not change.
type cachedRow struct {
	version rowVersion
	row     row
}

// rowVersion identifies what a cached row was computed from: the log (its place and size
// grow with every append) and whether a writer held it (a live session's open turn is not
// closed with recovery events).
type rowVersion struct {
	path string
	size int64
	live bool
}

// rowCache keeps the rows of the sessions the list had to load, so that showing the list
// again loads only the sessions that changed.
type rowCache struct {
	mu sync.Mutex
	m  map[string]cachedRow // by session id
}

func (c *rowCache) get(id string, v rowVersion) (row, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cr, ok := c.m[id]
	return cr.row, ok && cr.version == v
}

func (c *rowCache) put(id string, v rowVersion, r row) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[id] = cachedRow{version: v, row: r}
}

// keep forgets the rows of sessions no longer in the store.
func (c *rowCache) keep(infos []session.Info) {
	ids := make(map[string]bool, len(infos))
	for _, in := range infos {
		ids[in.Header.ID] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.m {
		if !ids[id] {
			delete(c.m, id)
		}
	}
}

// list serves one page of the session list, the most recently started first (?page=N,
// from 1). Only the sessions on the page are looked at: their summaries come from the
// store when it keeps them, else from loading the session once while its log does not
// change.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	page := 1
	if v := r.URL.Query().Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || strconv.Itoa(n) != v {
			s.fail(w, http.StatusBadRequest, fmt.Errorf("page: want a page number from 1, got %q", v))
			return
		}
		page = n
	}
	infos, err := s.opts.Store.List(r.Context())
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err)
		return
	}
	s.rows.keep(infos)
	size := s.opts.PageSize
	pages := max(1, (len(infos)+size-1)/size)
	if page > pages {
		s.fail(w, http.StatusNotFound, fmt.Errorf("page %d: there are %d sessions, %d a page (%d pages)", page, len(infos), size, pages))
		return
	}
	first := (page - 1) * size
	var rows []row
	for i := len(infos) - 1 - first; i >= 0 && len(rows) < size; i-- {
		rows = append(rows, s.row(r.Context(), infos[i]))
	}
	data := map[string]any{"Rows": rows, "Root": s.opts.Store.Root(), "Page": page, "Pages": pages, "Total": len(infos)}
	if page > 1 {
		data["Prev"] = pageURL(page - 1)
	}
	if page < pages {
		data["Next"] = pageURL(page + 1)
	}
	s.render(w, "list", data)
}

func pageURL(n int) string {
	if n == 1 {
		return "/"
	}
	return "/?" + url.Values{"page": {strconv.Itoa(n)}}.Encode()
}

// row describes one listed session. A store's own summary serves unless the last turn is
// open and no writer holds it (loading closes that turn as interrupted).
func (s *Server) row(ctx context.Context, in session.Info) row {
	id := in.Header.ID
	if in.Err != nil {
		return row{ID: id, Workspace: in.Path, Status: "unreadable", Err: in.Err.Error()}
	}
	live := s.held(ctx, id)
	base := row{ID: id, Created: when(in.Header.CreatedAt), Client: in.Header.Client}
	if sum := in.Summary; sum != nil && (live || sum.Turns == 0 || sum.LastEnd.Kind != "") {
		ls := &loadedSession{Live: live}
		return fill(base, *sum, ls.status(*sum))
	}
	v := rowVersion{path: in.Path, size: in.Size, live: live}
	if rw, ok := s.rows.get(id, v); ok {
		return rw
	}
	ls, err := s.loadAs(ctx, id, live)
	if err != nil {
		base.Workspace, base.Status, base.Err = in.Header.Cwd, "unreadable", err.Error()
		return base
	}
	sum := session.Summarize(ls.Header, ls.Events)
	rw := fill(base, sum, ls.status(sum))
	s.rows.put(id, v, rw)
	return rw
}

func fill(r row, sum session.Summary, status string) row {
	r.Workspace, r.Updated, r.FirstPrompt = sum.Cwd, when(sum.Updated), clip(firstLine(sum.FirstPrompt), 120)
	r.Status, r.Turns, r.Usage = status, sum.Turns, sum.Tokens
	return r
}
