package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/dsh-go/dsh/telemetry"
	"github.com/dsh-go/dsh/tool"
)

// tracingFlushTimeout bounds how long dsh waits at exit for its last spans to reach the
// collector.
const tracingFlushTimeout = 5 * time.Second

// tracingKey marks the process's tracing in the command's context.
type tracingKey struct{}

// startTracing sets up tracing from the OTEL_* environment (see package telemetry) and
// returns ctx carrying it, with the function that flushes it at exit; a flush failure is
// reported on stderr. A configuration error is returned for the caller to report.
func startTracing(ctx context.Context, getenv func(string) string, stderr io.Writer) (context.Context, func(), error) {
	t, err := telemetry.Setup(ctx, telemetry.Options{Getenv: getenv, Console: stderr})
	if err != nil {
		return ctx, func() {}, err
	}
	if !t.Enabled() {
		return ctx, func() {}, nil
	}
	return context.WithValue(ctx, tracingKey{}, t), func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingFlushTimeout)
		defer cancel()
		if err := t.Shutdown(fctx); err != nil {
			fmt.Fprintln(stderr, "dsh:", err)
		}
	}, nil
}

// tracingOf returns the tracing ctx carries, or nil (tracing disabled).
func tracingOf(ctx context.Context) *telemetry.Tracing {
	t, _ := ctx.Value(tracingKey{}).(*telemetry.Tracing)
	return t
}

// observeCalls installs the tracing's call observer on reg when tracing is enabled, and
// returns its removal.
func observeCalls(t *telemetry.Tracing, reg *tool.Registry) func() {
	if o := t.CallObserver(); o != nil {
		return reg.ObserveCalls(o)
	}
	return func() {}
}
