// Package content is the model-facing content vocabulary shared by tools, the session log
// and model adapters: content blocks (text, reasoning, image, tool-call, tool-result) and
// messages with their source attribution (docs/behaviour.md §1.2, §5.1).
//
// The vocabulary is open: a block of a type this package does not know keeps its members in
// Extra and round-trips through JSON unchanged.
package content

import (
	"fmt"
	"slices"

	"github.com/dsh-go/dsh/jsonv"
)

// Block types known to dsh.
const (
	TypeText       = "text"
	TypeReasoning  = "reasoning"
	TypeImage      = "image"
	TypeToolCall   = "tool-call"
	TypeToolResult = "tool-result"
)

// Block is one content block. Type selects which fields are meaningful:
//
//	text, reasoning   Text
//	image             Image
//	tool-call         ID, Name, Arguments (the raw JSON text the model emitted)
//	tool-result       ToolCallID, Content, IsError
//	anything else     Extra (every member but "type", in order)
type Block struct {
	Type       string
	Text       string
	Image      *ImageRef
	ID         string
	Name       string
	Arguments  string
	ToolCallID string
	Content    []Block
	IsError    bool
	Extra      *jsonv.Object
}

// ImageRef is a durable reference to an image attachment.
type ImageRef struct {
	AttachmentID string `json:"attachmentId"`
	MediaType    string `json:"mediaType"`
	Bytes        int64  `json:"bytes"`
	Width        int    `json:"width"`
	Height       int    `json:"height"`
	Name         string `json:"name,omitempty"`
}

// Text returns a text block.
func Text(s string) Block { return Block{Type: TypeText, Text: s} }

// Texts returns a one-block text content list, the most common tool content.
func Texts(s string) []Block { return []Block{Text(s)} }

// Reasoning returns a reasoning block.
func Reasoning(s string) Block { return Block{Type: TypeReasoning, Text: s} }

// ToolCall returns a tool-call block with the model's raw argument text.
func ToolCall(id, name, arguments string) Block {
	return Block{Type: TypeToolCall, ID: id, Name: name, Arguments: arguments}
}

// ToolResult returns a tool-result block answering the call with the given id.
func ToolResult(callID string, blocks []Block, isError bool) Block {
	return Block{Type: TypeToolResult, ToolCallID: callID, Content: blocks, IsError: isError}
}

// Clone returns a deep copy of b.
func (b Block) Clone() Block {
	if b.Image != nil {
		img := *b.Image
		b.Image = &img
	}
	if b.Content != nil {
		b.Content = Clone(b.Content)
	}
	if b.Extra != nil {
		c, err := jsonv.Snapshot(b.Extra)
		if err == nil {
			b.Extra = c.(*jsonv.Object)
		}
	}
	return b
}

// Clone returns a deep copy of blocks (nil stays nil).
func Clone(blocks []Block) []Block {
	if blocks == nil {
		return nil
	}
	out := make([]Block, len(blocks))
	for i, b := range blocks {
		out[i] = b.Clone()
	}
	return out
}

// Value returns b as a jsonv object in the wire shape ({"type":"text","text":…}).
func (b Block) Value() *jsonv.Object {
	o := &jsonv.Object{}
	o.Set("type", b.Type)
	switch b.Type {
	case TypeText, TypeReasoning:
		o.Set("text", b.Text)
	case TypeImage:
		img := &jsonv.Object{}
		if b.Image != nil {
			img.Set("attachmentId", b.Image.AttachmentID)
			img.Set("mediaType", b.Image.MediaType)
			img.Set("bytes", float64(b.Image.Bytes))
			img.Set("width", float64(b.Image.Width))
			img.Set("height", float64(b.Image.Height))
			if b.Image.Name != "" {
				img.Set("name", b.Image.Name)
			}
		}
		o.Set("attachment", img)
	case TypeToolCall:
		o.Set("id", b.ID)
		o.Set("name", b.Name)
		o.Set("arguments", b.Arguments)
	case TypeToolResult:
		o.Set("toolCallId", b.ToolCallID)
		o.Set("content", ListValue(b.Content))
		if b.IsError {
			o.Set("isError", true)
		}
	default:
		for name, v := range b.Extra.All() {
			if name != "type" {
				o.Set(name, v)
			}
		}
	}
	return o
}

// ListValue returns blocks as a jsonv array.
func ListValue(blocks []Block) []any {
	out := make([]any, len(blocks))
	for i, b := range blocks {
		out[i] = b.Value()
	}
	return out
}

// FromValue decodes one block from its wire shape. It reports which member is missing or
// has the wrong type.
func FromValue(v any) (Block, error) {
	o, ok := v.(*jsonv.Object)
	if !ok {
		return Block{}, fmt.Errorf("content block must be an object, got %s", jsonv.KindOf(v))
	}
	typ, err := str(o, "type", "")
	if err != nil {
		return Block{}, err
	}
	b := Block{Type: typ}
	switch typ {
	case TypeText, TypeReasoning:
		b.Text, err = str(o, "text", typ)
	case TypeImage:
		a, ok := o.Get("attachment")
		ao, isObj := a.(*jsonv.Object)
		if !ok || !isObj {
			return Block{}, fmt.Errorf(`image block: "attachment" must be an object`)
		}
		img := &ImageRef{}
		if img.AttachmentID, err = str(ao, "attachmentId", "image attachment"); err != nil {
			return Block{}, err
		}
		if img.MediaType, err = str(ao, "mediaType", "image attachment"); err != nil {
			return Block{}, err
		}
		img.Bytes = int64(num(ao, "bytes"))
		img.Width = int(num(ao, "width"))
		img.Height = int(num(ao, "height"))
		if n, ok := ao.Get("name"); ok {
			img.Name, _ = n.(string)
		}
		b.Image = img
	case TypeToolCall:
		if b.ID, err = str(o, "id", typ); err == nil {
			if b.Name, err = str(o, "name", typ); err == nil {
				b.Arguments, err = str(o, "arguments", typ)
			}
		}
	case TypeToolResult:
		if b.ToolCallID, err = str(o, "toolCallId", typ); err != nil {
			return Block{}, err
		}
		c, ok := o.Get("content")
		if !ok {
			return Block{}, fmt.Errorf(`tool-result block: "content" must be an array of blocks`)
		}
		if b.Content, err = ListFromValue(c); err != nil {
			return Block{}, fmt.Errorf("tool-result block: %w", err)
		}
		if e, ok := o.Get("isError"); ok {
			if b.IsError, ok = e.(bool); !ok {
				return Block{}, fmt.Errorf(`tool-result block: "isError" must be a boolean`)
			}
		}
	default:
		extra := &jsonv.Object{}
		for name, v := range o.All() {
			if name != "type" {
				extra.Set(name, v)
			}
		}
		b.Extra = extra
	}
	if err != nil {
		return Block{}, err
	}
	return b, nil
}

// ListFromValue decodes a block list from a jsonv array.
func ListFromValue(v any) ([]Block, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("content must be an array of blocks, got %s", jsonv.KindOf(v))
	}
	out := make([]Block, 0, len(arr))
	for i, e := range arr {
		b, err := FromValue(e)
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
		out = append(out, b)
	}
	return out, nil
}

func str(o *jsonv.Object, name, what string) (string, error) {
	v, ok := o.Get(name)
	s, isStr := v.(string)
	if !ok || !isStr {
		if what == "" {
			return "", fmt.Errorf("content block: %q must be a string", name)
		}
		return "", fmt.Errorf("%s block: %q must be a string", what, name)
	}
	return s, nil
}

func num(o *jsonv.Object, name string) float64 {
	v, _ := o.Get(name)
	f, _ := v.(float64)
	return f
}

// MarshalJSON encodes b in its wire shape.
func (b Block) MarshalJSON() ([]byte, error) { return jsonv.Marshal(b.Value()) }

// UnmarshalJSON decodes b from its wire shape, strictly.
func (b *Block) UnmarshalJSON(data []byte) error {
	v, err := jsonv.Parse(data)
	if err != nil {
		return err
	}
	nb, err := FromValue(v)
	if err != nil {
		return err
	}
	*b = nb
	return nil
}

// Role is the author of a message.
type Role string

// Message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
)

// Source attributes a user-role message: typed by the user, injected by a plugin, or
// produced by a tool call.
type Source struct {
	Kind    string `json:"kind"`              // "user", "plugin" or "tool"
	Plugin  string `json:"plugin,omitempty"`  // kind "plugin": the plugin's id
	Form    string `json:"form,omitempty"`    // kind "plugin": an optional form, e.g. "notice"
	Summary string `json:"summary,omitempty"` // kind "plugin": an optional one-line summary
	CallID  string `json:"callId,omitempty"`  // kind "tool": the call that produced it
}

// Message is one message of a conversation.
type Message struct {
	ID      string  `json:"id"`
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
	Source  *Source `json:"source,omitempty"`
}

// Clone returns a deep copy of m.
func (m Message) Clone() Message {
	m.Content = Clone(m.Content)
	if m.Source != nil {
		s := *m.Source
		m.Source = &s
	}
	return m
}

// CloneMessages returns a deep copy of msgs (nil stays nil).
func CloneMessages(msgs []Message) []Message {
	if msgs == nil {
		return nil
	}
	out := slices.Clone(msgs)
	for i := range out {
		out[i] = out[i].Clone()
	}
	return out
}
