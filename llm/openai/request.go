package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/llm"
)

// noOutput is the content of a tool message whose result has no text: the protocol needs
// some content, and an empty string reads to the model like a lost result.
const noOutput = "(no output)"

// wireRequest is the chat-completions request body.
type wireRequest struct {
	Model         string                  `json:"model"`
	Messages      []wireMessage           `json:"messages"`
	Tools         []wireTool              `json:"tools,omitempty"`
	MaxTokens     int                     `json:"max_tokens,omitempty"`
	Temperature   *float64                `json:"temperature,omitempty"`
	Stream        bool                    `json:"stream"`
	StreamOptions *goopenai.StreamOptions `json:"stream_options,omitempty"`
	// Thinking and ReasoningEffort are DeepSeek's per-request thinking controls.
	Thinking        *wireThinking `json:"thinking,omitempty"`
	ReasoningEffort string        `json:"reasoning_effort,omitempty"`
}

// wireThinking is DeepSeek's {"type": "enabled"|"disabled"}.
type wireThinking struct {
	Type string `json:"type"`
}

// wireTool is one tool of the request. (goopenai.Tool marshals through a map, which
// escapes "<", ">" and "&" in descriptions and reorders members.)
type wireTool struct {
	Type     goopenai.ToolType            `json:"type"`
	Function *goopenai.FunctionDefinition `json:"function"`
}

// wireMessage is one request message. Content is always present — an empty string on a
// tool-call-only or reasoning-only assistant turn — because DeepSeek rejects an assistant
// message that has neither content nor tool calls.
type wireMessage struct {
	Role             string              `json:"role"`
	Content          string              `json:"content"`
	ReasoningContent string              `json:"reasoning_content,omitempty"`
	ToolCalls        []goopenai.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string              `json:"tool_call_id,omitempty"`
}

// requestBody encodes req for this model.
func (m *Model) requestBody(req llm.Request) ([]byte, error) {
	w := wireRequest{
		Model:           m.cfg.Model,
		Messages:        wireMessages(req, !m.cfg.OmitReasoning),
		MaxTokens:       req.MaxTokens,
		Temperature:     req.Temperature,
		Stream:          true,
		StreamOptions:   &goopenai.StreamOptions{IncludeUsage: true},
		ReasoningEffort: m.cfg.ReasoningEffort,
	}
	if m.cfg.Thinking != "" {
		w.Thinking = &wireThinking{Type: m.cfg.Thinking}
	}
	for i, t := range req.Tools {
		params, err := schemaJSON(t.Parameters)
		if err != nil {
			return nil, &llm.Error{Code: llm.CodeInvalidRequest, Err: err,
				Message: fmt.Sprintf("tool %q (tools[%d]): parameters cannot be sent: %v", t.Name, i, err)}
		}
		w.Tools = append(w.Tools, wireTool{
			Type: goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{
				Name: t.Name, Description: t.Description, Parameters: params, Strict: t.Strict,
			},
		})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, &llm.Error{Code: llm.CodeInvalidRequest, Err: err,
			Message: fmt.Sprintf("encoding the request for %s: %v", m.url, err)}
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// schemaJSON encodes a tool's parameter schema, keeping member order.
func schemaJSON(p any) (json.RawMessage, error) {
	if p == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	v, err := jsonv.Snapshot(p)
	if err != nil {
		if v, err = jsonv.FromGo(p); err != nil {
			return nil, err
		}
	}
	if _, ok := v.(*jsonv.Object); !ok {
		return nil, fmt.Errorf("a JSON Schema must be an object, got %s", jsonv.KindOf(v))
	}
	b, err := jsonv.Marshal(v)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// wireMessages maps the conversation onto chat-completions messages:
//
//   - the system prompt and system messages become system messages;
//   - an assistant message becomes one assistant message: its text blocks joined as
//     content, its reasoning blocks joined as reasoning_content (when sendReasoning), its
//     tool-call blocks as tool_calls with the raw argument text ("{}" when empty);
//   - a user message's tool-result blocks become one tool message each, in order, with the
//     result's text (see resultText), followed by a user message with the remaining
//     content when there is any — tool messages must directly follow the assistant turn
//     that called them.
func wireMessages(req llm.Request, sendReasoning bool) []wireMessage {
	out := make([]wireMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		out = append(out, wireMessage{Role: "system", Content: req.System})
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case content.RoleAssistant:
			out = append(out, assistantMessage(msg, sendReasoning))
		case content.RoleSystem:
			out = append(out, wireMessage{Role: "system", Content: renderText(msg.Content)})
		default:
			rest := make([]content.Block, 0, len(msg.Content))
			results := 0
			for _, b := range msg.Content {
				if b.Type != content.TypeToolResult {
					rest = append(rest, b)
					continue
				}
				results++
				text := renderText(b.Content)
				if text == "" {
					text = noOutput
				}
				out = append(out, wireMessage{Role: "tool", ToolCallID: b.ToolCallID, Content: text})
			}
			if len(rest) > 0 || results == 0 {
				out = append(out, wireMessage{Role: "user", Content: renderText(rest)})
			}
		}
	}
	return out
}

func assistantMessage(msg content.Message, sendReasoning bool) wireMessage {
	w := wireMessage{Role: "assistant"}
	var text, reasoning strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case content.TypeText:
			text.WriteString(b.Text)
		case content.TypeReasoning:
			reasoning.WriteString(b.Text)
		case content.TypeToolCall:
			args := b.Arguments
			if args == "" {
				args = "{}"
			}
			w.ToolCalls = append(w.ToolCalls, goopenai.ToolCall{
				ID:       b.ID,
				Type:     goopenai.ToolTypeFunction,
				Function: goopenai.FunctionCall{Name: b.Name, Arguments: args},
			})
		}
	}
	w.Content = text.String()
	if sendReasoning {
		w.ReasoningContent = reasoning.String()
	}
	return w
}

// renderText is the text of a user message or tool result: its text blocks joined, any
// other block rendered as "[<type> content]" (the server sees no images or nested results).
func renderText(blocks []content.Block) string {
	var sb strings.Builder
	for _, b := range blocks {
		if b.Type == content.TypeText {
			sb.WriteString(b.Text)
		} else {
			sb.WriteString("[" + b.Type + " content]")
		}
	}
	return sb.String()
}
