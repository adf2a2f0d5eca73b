package mcp_test

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/tool"
)

func ExamplePublicToolName() {
	fmt.Println(mcp.PublicToolName("fs", "read_file"))
	fmt.Println(mcp.PublicToolName("fs", "dotted.name"))
	// Output:
	// mcp__fs__read_file
	// mcp__fs__dotted_name_2639a46d7430
}

func ExampleProjectText() {
	blocks, _ := jsonv.ParseString(`[{"type":"text","text":"two files"},{"type":"resource_link","name":"a.txt","uri":"file:///a.txt"},{"type":"image","mimeType":"image/png","data":"…"}]`)
	fmt.Println(mcp.ProjectText(blocks.([]any), "list"))
	// Output:
	// two files
	// Resource link: a.txt (file:///a.txt)
	// [image unavailable: image/png; this result was not admitted to durable model context; raw image data remains available to programmatic callers]
}

// greeter is an in-process MCP server written with the go-sdk.
func greeter() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "greeter"}, nil)
	type in struct {
		Name string `json:"name"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "greet", Description: "Say hi."}, func(_ context.Context, _ *sdk.CallToolRequest, in in) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Hi " + in.Name}}}, nil, nil
	})
	return s
}

// inMemory returns a Transport option that connects every attempt to srv in process.
func inMemory(srv *sdk.Server) func(string, mcp.ServerConfig) sdk.Transport {
	return func(string, mcp.ServerConfig) sdk.Transport {
		client, server := sdk.NewInMemoryTransports()
		go srv.Run(context.Background(), server) // returns when the client disconnects
		return client
	}
}

func ExampleHost() {
	reg, _ := tool.NewRegistry(tool.Config{})
	host := mcp.NewHost(reg.Global(), mcp.Options{Transport: inMemory(greeter())})
	defer host.Close()

	// A declaration from the configuration (mcp.servers.greeter); the in-process transport
	// stands in for the command.
	m, err := host.Mount(context.Background(), "greeter", mcp.ServerConfig{Command: "greeter-server"})
	if err != nil {
		panic(err)
	}
	fmt.Println(m.State(), reg.Names(nil))

	res := reg.Execute(context.Background(), tool.Input{CallID: "c1", Name: "mcp__greeter__greet", Args: tool.ParseArguments(`{"name":"Gopher"}`)})
	fmt.Println(res.Content[0].Text)
	// Output:
	// connected [mcp__greeter__greet]
	// Hi Gopher
}

func ExampleServer() {
	reg, _ := tool.NewRegistry(tool.Config{})
	type in struct {
		A, B int
	}
	reg.Register(tool.Must(tool.New("add", "Add two numbers.", func(_ context.Context, _ *tool.Call, in in) (int, error) {
		return in.A + in.B, nil
	}, tool.ConcurrencySafe())))
	reg.SetApprover(mcp.UnattendedApprover())

	srv := mcp.NewServer(reg, mcp.ServerOptions{})
	defer srv.Close()
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.ServeTransport(ctx, st) }() // srv.ServeStdio(ctx, os.Stdin, os.Stdout) for `dsh mcp serve`
	defer func() { cancel(); <-served }()

	cs, err := sdk.NewClient(&sdk.Implementation{Name: "client"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	list, _ := cs.ListTools(ctx, nil)
	fmt.Println(list.Tools[0].Name, "read-only:", list.Tools[0].Annotations.ReadOnlyHint)
	res, _ := cs.CallTool(ctx, &sdk.CallToolParams{Name: "add", Arguments: map[string]any{"A": 2, "B": 40}})
	fmt.Println(res.Content[0].(*sdk.TextContent).Text)
	// Output:
	// add read-only: true
	// 42
}
