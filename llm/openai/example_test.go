package openai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/llm/openai"
)

// A local OpenAI-compatible server streams a reply with a tool call whose arguments arrive
// in pieces; the adapter assembles it.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, data := range []string{
			`{"choices":[{"index":0,"delta":{"reasoning_content":"The user wants the file."}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"notes.txt\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150}}`,
			`[DONE]`,
		} {
			io.WriteString(w, "data: "+data+"\n\n")
		}
	}))
	defer srv.Close()

	m, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "deepseek-reasoner", HTTPClient: srv.Client()})
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev, err := range m.Stream(context.Background(), llm.Request{System: "You are helpful."}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch ev.Type {
		case llm.EventToolCallDelta:
			fmt.Printf("%s +%q\n", ev.Block.Name, ev.Text)
		case llm.EventFinish:
			r := ev.Response
			fmt.Println("reasoning:", r.Reasoning())
			for _, c := range r.ToolCalls() {
				fmt.Printf("call %s %s(%s)\n", c.ID, c.Name, c.Arguments)
			}
			fmt.Println("finish:", r.FinishReason, "output tokens:", r.Usage.OutputTokens)
		}
	}
	// Output:
	// read_file +"{\"path\":"
	// read_file +"\"notes.txt\"}"
	// reasoning: The user wants the file.
	// call call_1 read_file({"path":"notes.txt"})
	// finish: tool-calls output tokens: 30
}

// Configuration for DeepSeek reads the key from DEEPSEEK_API_KEY; any other
// OpenAI-compatible endpoint takes a base URL and a model.
func ExampleConfigFromEnv() {
	cfg, err := openai.ConfigFromEnv("DSH_EXAMPLE_UNSET_KEY")
	if err != nil {
		fmt.Println(err)
	}
	// A local server needs no key.
	cfg.BaseURL = "http://localhost:11434/v1"
	cfg.Model = "qwen3:8b"
	m, err := openai.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Provider(), m.Name(), m.BaseURL())
	// Output:
	// DSH_EXAMPLE_UNSET_KEY is not set (export it, or pass --api-key-env NAME for another variable)
	// openai-compatible qwen3:8b http://localhost:11434/v1
}

// A model DeepSeek has retired is refused before any request, with its replacement named.
func ExampleRetiredModelError() {
	_, err := openai.New(openai.Config{APIKey: "sk-example", Model: "deepseek-reasoner"})
	fmt.Println(llm.CodeOf(err))
	fmt.Println(err)
	// Output:
	// UNKNOWN_MODEL
	// model "deepseek-reasoner" was retired by DeepSeek on 2026-07-24 and no longer answers; use "deepseek-flash" instead (--model deepseek-flash, or model: deepseek-flash in the configuration; thinking is on by default, --thinking disabled turns it off)
}
