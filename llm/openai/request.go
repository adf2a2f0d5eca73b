package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
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
	Content          wireContent         `json:"content"`
	ReasoningContent string              `json:"reasoning_content,omitempty"`
	ToolCalls        []goopenai.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string              `json:"tool_call_id,omitempty"`
}

// wireContent is a message's content: a string, or, for a user message carrying images,
// an array of text and image_url parts.
type wireContent struct {
	text  string
	parts []wirePart
}

func textContent(s string) wireContent { return wireContent{text: s} }

// MarshalJSON encodes the string or the parts, without HTML escaping like the request.
func (c wireContent) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var err error
	if c.parts == nil {
		err = enc.Encode(c.text)
	} else {
		err = enc.Encode(c.parts)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}

// wirePart is one part of an array content: {"type":"text","text":…} or
// {"type":"image_url","image_url":{"url":"data:<media type>;base64,…"}}.
type wirePart struct {
	Type     string        `json:"type"`
	Text     *string       `json:"text,omitempty"`
	ImageURL *wireImageURL `json:"image_url,omitempty"`
}

type wireImageURL struct {
	URL string `json:"url"`
}

// requestBody encodes req for this model.
func (m *Model) requestBody(req llm.Request) ([]byte, error) {
	w := wireRequest{
		Model:           m.cfg.Model,
		Messages:        wireMessages(req, !m.cfg.OmitReasoning, m.imageBudget(req)),
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
//     result's text (see renderText), followed by a user message with the remaining
//     content when there is any — tool messages must directly follow the assistant turn
//     that called them;
//   - with images (the model accepts them and req.Attachments is set), the images of the
//     tool results, which a tool message cannot carry, follow in that user message as
//     image_url parts, and a user message's own images are parts in place; images past
//     the request's image budget (the oldest first) are left out with a note.
func wireMessages(req llm.Request, sendReasoning bool, images *imageBudget) []wireMessage {
	out := make([]wireMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		out = append(out, wireMessage{Role: "system", Content: textContent(req.System)})
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case content.RoleAssistant:
			out = append(out, assistantMessage(msg, sendReasoning))
		case content.RoleSystem:
			out = append(out, wireMessage{Role: "system", Content: textContent(renderText(msg.Content, nil))})
		default:
			rest := make([]content.Block, 0, len(msg.Content))
			var resultImages []content.Block
			results := 0
			for _, b := range msg.Content {
				if b.Type != content.TypeToolResult {
					rest = append(rest, b)
					continue
				}
				results++
				text := renderText(b.Content, images)
				if text == "" {
					text = noOutput
				}
				for _, c := range b.Content {
					if isImage(c) && images.send(c.Image) {
						resultImages = append(resultImages, c)
					}
				}
				out = append(out, wireMessage{Role: "tool", ToolCallID: b.ToolCallID, Content: textContent(text)})
			}
			if len(resultImages) > 0 {
				rest = append(append([]content.Block{content.Text(resultImagesIntro)}, resultImages...), rest...)
			}
			if len(rest) > 0 || results == 0 {
				out = append(out, wireMessage{Role: "user", Content: userContent(rest, images, req.Attachments)})
			}
		}
	}
	return out
}

// resultImagesIntro precedes, in the user message after the tool messages, the images the
// tool results carried.
const resultImagesIntro = "The images attached to the tool results above, in order:"

// userContent is the content of a user message: its text (see renderText) when it has no
// image to send, else text and image_url parts in block order. An image whose bytes cannot
// be read is a text part saying so, so one lost file does not fail the whole request.
func userContent(blocks []content.Block, images *imageBudget, att llm.AttachmentReader) wireContent {
	if !slices.ContainsFunc(blocks, func(b content.Block) bool { return isImage(b) && images.send(b.Image) }) {
		return textContent(renderText(blocks, images))
	}
	var parts []wirePart
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			s := text.String()
			parts = append(parts, wirePart{Type: "text", Text: &s})
			text.Reset()
		}
	}
	for _, b := range blocks {
		if !isImage(b) || !images.send(b.Image) {
			text.WriteString(renderText([]content.Block{b}, images))
			continue
		}
		mediaType, data, err := att.ReadAttachment(b.Image.AttachmentID)
		if err != nil {
			text.WriteString("[image unavailable: " + err.Error() + "]")
			continue
		}
		flush()
		parts = append(parts, wirePart{Type: "image_url", ImageURL: &wireImageURL{
			URL: "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(data)}})
	}
	flush()
	return wireContent{parts: parts}
}

func isImage(b content.Block) bool { return b.Type == content.TypeImage && b.Image != nil }

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
	w.Content = textContent(text.String())
	if sendReasoning {
		w.ReasoningContent = reasoning.String()
	}
	return w
}

// renderText is the text of a user message or tool result: its text blocks joined, any
// other block rendered as "[<type> content]". When images are sent, an image block is
// "[image: <media type>, <w>x<h> px, attached]" instead (userContent sends the image), or
// says it was left out when it is past the request's image budget.
func renderText(blocks []content.Block, images *imageBudget) string {
	var sb strings.Builder
	for _, b := range blocks {
		switch {
		case b.Type == content.TypeText:
			sb.WriteString(b.Text)
		case images != nil && isImage(b) && images.send(b.Image):
			fmt.Fprintf(&sb, "[image: %s, %dx%d px, attached]", b.Image.MediaType, b.Image.Width, b.Image.Height)
		case images != nil && isImage(b):
			fmt.Fprintf(&sb, "[image: %s, %dx%d px, left out of this request: the newer images use up its budget of %d images and %d bytes]",
				b.Image.MediaType, b.Image.Width, b.Image.Height, images.maxImages, images.maxBytes)
		default:
			sb.WriteString("[" + b.Type + " content]")
		}
	}
	return sb.String()
}

// imageBudget decides which image blocks of a request are sent: the newest ones, up to a
// number of images and of bytes, so that a long session full of images does not grow past
// what the server accepts. A nil budget sends none.
type imageBudget struct {
	maxImages int
	maxBytes  int64
	sent      map[*content.ImageRef]bool
}

// imageBudget returns the budget of req, or nil when the model is sent no images.
func (m *Model) imageBudget(req llm.Request) *imageBudget {
	if !m.images || req.Attachments == nil {
		return nil
	}
	b := &imageBudget{maxImages: m.cfg.MaxRequestImages, maxBytes: m.cfg.MaxRequestImageBytes, sent: map[*content.ImageRef]bool{}}
	var refs []*content.ImageRef // in request order
	for _, msg := range req.Messages {
		for _, blk := range msg.Content {
			if isImage(blk) {
				refs = append(refs, blk.Image)
			}
			for _, c := range blk.Content {
				if isImage(c) {
					refs = append(refs, c.Image)
				}
			}
		}
	}
	var total int64
	for i := len(refs) - 1; i >= 0 && len(b.sent) < b.maxImages; i-- {
		if total+refs[i].Bytes > b.maxBytes {
			break
		}
		total += refs[i].Bytes
		b.sent[refs[i]] = true
	}
	return b
}

// send reports whether the image is sent.
func (b *imageBudget) send(ref *content.ImageRef) bool {
	return b != nil && b.sent[ref]
}
