package mcp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/testwait"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/mcp"
)

// TestServerCloseEndsIdleHTTPSessions opens streamable HTTP sessions that never call a
// tool — one that only initialized, one that also listed the tools, and a raw one that sent
// initialize but never notifications/initialized and holds its standalone SSE stream open —
// and closes the server: the Close hooks of the sessions the host saw run, every client sees
// its connection end, new sessions are refused, and no goroutine is left behind (goleak in
// TestMain).
func TestServerCloseEndsIdleHTTPSessions(t *testing.T) {
	f := newFixture(t)
	rec := &recorder{}
	s := mcp.NewServer(f.reg, rec.options(f.reg))
	hs := httptest.NewServer(s.Handler(nil))
	defer hs.Close()
	ctx := context.Background()
	var clients []*sdk.ClientSession
	for i := range 2 {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: hs.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if i == 1 {
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		clients = append(clients, cs)
	}
	eventually(t, "both sessions to open", func() bool { return len(rec.all()) == 2 })
	stream := rawSession(t, hs.URL)
	defer stream.Close()

	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	testwait.Recv(t, closed, "Server.Close to return")
	if got := rec.all(); !slices.Equal(got, []string{"open streamable-http", "open streamable-http", "close", "close"}) {
		t.Errorf("session events = %v, want both sessions closed by Server.Close", got)
	}
	for i, cs := range clients {
		ended := make(chan error, 1)
		go func() { ended <- cs.Wait() }()
		testwait.Recv(t, ended, fmt.Sprintf("client %d's connection to end after Server.Close", i))
	}
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, stream)
		ended <- err
	}()
	testwait.Recv(t, ended, "the uninitialized session's SSE stream to end after Server.Close")
	// New sessions are refused.
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err == nil {
		cs.Close()
		t.Error("a new session connected to a closed server")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// rawSession sends an MCP initialize request over plain HTTP, never follows it with
// notifications/initialized, and opens the session's standalone SSE stream, whose body it
// returns.
func rawSession(t *testing.T, url string) io.ReadCloser {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" || !strings.Contains(string(body), `"serverInfo"`) {
		t.Fatalf("initialize: %s, session %q\n%s", resp.Status, id, body)
	}
	get, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", id)
	get.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	sse, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	if sse.StatusCode != http.StatusOK {
		sse.Body.Close()
		t.Fatalf("standalone SSE stream: %s", sse.Status)
	}
	return sse.Body
}
