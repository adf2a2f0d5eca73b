package session

import (
	"fmt"

	"github.com/dsh-go/dsh/content"
)

// DeriveMessages rebuilds the model history from a log (docs/behaviour.md §9.1): the messages of the
// user/message, assistant/message and tool/result events on the surface (SurfaceOp
// "append"), in log order. Every other event — tool/call, tool/code-dispatch-start,
// tool/code-dispatch, boundaries, audits — is ignored, and so is an assistant/message with
// no content (it only carries usage). The messages are fresh copies.
func DeriveMessages(events []Event) ([]content.Message, error) {
	var out []content.Message
	for i := range events {
		e := &events[i]
		if e.SurfaceOp != SurfaceAppend {
			continue
		}
		switch e.Type {
		case TypeUserMessage:
			p, err := DecodeUserMessage(*e)
			if err != nil {
				return nil, fmt.Errorf("session: derive messages: seq %d: %w", e.Seq, err)
			}
			out = append(out, p.Message)
		case TypeAssistantMessage:
			p, err := DecodeAssistantMessage(*e)
			if err != nil {
				return nil, fmt.Errorf("session: derive messages: seq %d: %w", e.Seq, err)
			}
			if len(p.Message.Content) > 0 {
				out = append(out, p.Message)
			}
		case TypeToolResult:
			p, err := DecodeToolResult(*e)
			if err != nil {
				return nil, fmt.Errorf("session: derive messages: seq %d: %w", e.Seq, err)
			}
			out = append(out, content.Message{
				ID:      p.MessageID,
				Role:    content.RoleUser,
				Source:  &content.Source{Kind: "tool", CallID: p.CallID},
				Content: []content.Block{content.ToolResult(p.CallID, p.Content, p.IsError)},
			})
		}
	}
	return out, nil
}
