package mcp_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/tool"
)

// The bridge's per-call overhead over a direct go-sdk call to the same server: argument
// snapshot and encoding, the pipeline, raw result capture, lossless parse and projection.

func BenchmarkCallInMemory(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		ct, st := sdk.NewInMemoryTransports()
		srv := greeter()
		done := make(chan struct{})
		go func() { srv.Run(context.Background(), st); close(done) }()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil).Connect(context.Background(), ct, &sdk.ClientSessionOptions{ProtocolVersion: mcp.DefaultProtocolVersion})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { cs.Close(); <-done }()
		benchDirect(b, cs, "greet", json.RawMessage(`{"name":"bench"}`))
	})
	b.Run("bridge", func(b *testing.B) {
		reg, _ := tool.NewRegistry(tool.Config{})
		host := mcp.NewHost(reg.Global(), mcp.Options{Transport: inMemory(greeter()), Logger: discardLogger()})
		defer host.Close()
		if _, err := host.Mount(context.Background(), "mem", mcp.ServerConfig{Command: "in-memory"}); err != nil {
			b.Fatal(err)
		}
		benchBridge(b, reg, "mcp__mem__greet", `{"name":"bench"}`)
	})
}

func BenchmarkCallStdio(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		t := &sdk.CommandTransport{Command: exec.Command(badServer), TerminateDuration: 200 * time.Millisecond}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil).Connect(context.Background(), t, &sdk.ClientSessionOptions{ProtocolVersion: mcp.DefaultProtocolVersion})
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		benchDirect(b, cs, "echo", json.RawMessage(`{"text":"bench"}`))
	})
	b.Run("bridge", func(b *testing.B) {
		reg, _ := tool.NewRegistry(tool.Config{})
		host := mcp.NewHost(reg.Global(), mcp.Options{Logger: discardLogger(), ShutdownGrace: 200 * time.Millisecond})
		defer host.Close()
		if _, err := host.Mount(context.Background(), "bad", mcp.ServerConfig{Command: badServer}); err != nil {
			b.Fatal(err)
		}
		benchBridge(b, reg, "mcp__bad__echo", `{"text":"bench"}`)
	})
}

func benchDirect(b *testing.B, cs *sdk.ClientSession, name string, args json.RawMessage) {
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

func benchBridge(b *testing.B, reg *tool.Registry, name, args string) {
	b.ReportAllocs()
	for b.Loop() {
		res := reg.Execute(context.Background(), tool.Input{CallID: "c", Name: name, Args: tool.ParseArguments(args)})
		if res.IsError {
			b.Fatal(res.Error)
		}
	}
}
