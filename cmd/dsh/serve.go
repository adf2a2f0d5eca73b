package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/dsh-go/dsh/policy/approval"
	"github.com/dsh-go/dsh/tool"
	"github.com/dsh-go/dsh/viewer"
)

// defaultServeAddr is where "dsh session serve" listens unless told otherwise.
const defaultServeAddr = "127.0.0.1:8377"

// runSessionServe implements "dsh session serve": the session viewer on a local web
// server until dsh is interrupted. A loopback address needs no token; any other address
// gets a fresh token, printed in the URL, that every request must carry.
func runSessionServe(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "session serve", "session serve [--addr 127.0.0.1:8377] [--sessions-dir DIR]")
	addr := fs.String("addr", defaultServeAddr, "the address to listen on; anything but a loopback address requires the access token printed at start")
	cf := addConfigFlags(fs, "sessions.root")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	c, err := loadConfig(e, e.cwd, cf)
	if err != nil {
		return err
	}
	store, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer closeStore(store)
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return &usageError{fmt.Sprintf("--addr %q: want host:port, e.g. %s: %v", *addr, defaultServeAddr, err)}
	}
	token := ""
	if !loopbackAddr(host) {
		if token, err = viewer.NewToken(); err != nil {
			return err
		}
	}
	// The cards come from the tools' presenters, which depend only on a call's arguments
	// and durable result, as in "dsh session show".
	rt, err := newRuntime(ctx, runtimeConfig{Workspace: os.TempDir(), Mode: tool.ModeBoth, Config: c.Config, NoMCP: true})
	if err != nil {
		return err
	}
	defer rt.Close()
	v, err := viewer.New(viewer.Options{Store: store, Token: token, Approvals: approval.SocketDir(c.home),
		Definition: func(name string) *tool.Definition { return rt.reg.Get(name, nil) }})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	srv := &http.Server{Handler: v, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	url := "http://" + ln.Addr().String() + "/"
	if token != "" {
		url += "?token=" + token
		fmt.Fprintf(e.stderr, "The viewer listens on %s, beyond this machine's loopback: open it with the token in this URL.\n", ln.Addr())
	}
	fmt.Fprintf(e.stdout, "dsh session viewer: %s\n", url)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving the viewer: %w", err)
	case <-ctx.Done():
	}
	// The live streams end with ctx (their requests' base context); Shutdown waits for them.
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(shut)
	if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// loopbackAddr reports whether a listen host is this machine's loopback only.
func loopbackAddr(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
