package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
)

// temporalFlags name the Temporal server a durable command talks to.
type temporalFlags struct {
	addr      *string
	namespace *string
}

func addTemporalFlags(fs *flag.FlagSet) temporalFlags {
	return temporalFlags{
		addr:      fs.String("temporal", "", "run on the Temporal server at HOST:PORT (a durable session)"),
		namespace: fs.String("namespace", "default", "with --temporal: the Temporal namespace"),
	}
}

// check refuses an address that is not HOST:PORT.
func (f temporalFlags) check() error {
	if _, _, err := net.SplitHostPort(*f.addr); err != nil {
		return &usageError{fmt.Sprintf("--temporal wants HOST:PORT, got %q", *f.addr)}
	}
	return nil
}

// dial connects to the Temporal server the flags name; the SDK's own messages go to the
// standard error, warnings and errors only.
func (f temporalFlags) dial(e *env) (client.Client, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	logger := tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	c, err := client.Dial(client.Options{HostPort: *f.addr, Namespace: *f.namespace, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s: %w", *f.addr, err)
	}
	return c, nil
}

// workflowID is the Temporal workflow id of a dsh session.
func workflowID(sessionID string) string { return "dsh-session-" + sessionID }
