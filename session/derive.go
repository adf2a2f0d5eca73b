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
	// One counting pass sizes the result and the blocks and sources of the tool results
	// exactly, so the derivation allocates them once instead of growing a slice of
	// messages (which copied and rescanned the whole history at every doubling) and
	// allocating two small objects per tool result.
	var surface, results int
	for i := range events {
		e := &events[i]
		if e.SurfaceOp != SurfaceAppend {
			continue
		}
		switch e.Type {
		case TypeUserMessage, TypeAssistantMessage:
			surface++
		case TypeToolResult:
			surface++
			results++
		}
	}
	if surface == 0 {
		return nil, nil
	}
	out := make([]content.Message, 0, surface)
	sources := make([]content.Source, results)
	blocks := make([]content.Block, results)
	r := 0
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
			sources[r] = content.Source{Kind: "tool", CallID: p.CallID}
			blocks[r] = content.ToolResult(p.CallID, p.Content, p.IsError)
			out = append(out, content.Message{
				ID:     p.MessageID,
				Role:   content.RoleUser,
				Source: &sources[r],
				// A full slice expression: appending to one message's content never
				// writes into the next message's block.
				Content: blocks[r : r+1 : r+1],
			})
			r++
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
