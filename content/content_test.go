package content_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
)

// TestWireShape checks each block type's wire shape both ways: Value/MarshalJSON produce
// exactly the wire text, and UnmarshalJSON reads it back into the same block.
func TestWireShape(t *testing.T) {
	unknown := jsonv.NewObject(jsonv.Member{Name: "url", Value: "https://x"}, jsonv.Member{Name: "n", Value: float64(2)})
	tests := []struct {
		name  string
		block content.Block
		wire  string
	}{
		{"text", content.Text("hi"), `{"type":"text","text":"hi"}`},
		{"empty text", content.Text(""), `{"type":"text","text":""}`},
		{"reasoning", content.Reasoning("hmm"), `{"type":"reasoning","text":"hmm"}`},
		{"tool call keeps the raw argument text", content.ToolCall("c1", "read", `{"path": "a"}`),
			`{"type":"tool-call","id":"c1","name":"read","arguments":"{\"path\": \"a\"}"}`},
		{"tool result", content.ToolResult("c1", content.Texts("ok"), false),
			`{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"ok"}]}`},
		{"failed tool result", content.ToolResult("c2", []content.Block{}, true),
			`{"type":"tool-result","toolCallId":"c2","content":[],"isError":true}`},
		{"image", content.Block{Type: content.TypeImage, Image: &content.ImageRef{AttachmentID: "a1", MediaType: "image/png", Bytes: 10, Width: 2, Height: 3, Name: "x.png"}},
			`{"type":"image","attachment":{"attachmentId":"a1","mediaType":"image/png","bytes":10,"width":2,"height":3,"name":"x.png"}}`},
		{"unknown type keeps its members in order", content.Block{Type: "web-link", Extra: unknown},
			`{"type":"web-link","url":"https://x","n":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.block)
			if err != nil || string(b) != tt.wire {
				t.Fatalf("MarshalJSON = %s, %v\nwant %s", b, err, tt.wire)
			}
			var back content.Block
			if err := json.Unmarshal([]byte(tt.wire), &back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.block, back, cmpBlocks); diff != "" {
				t.Errorf("UnmarshalJSON (-want +got):\n%s", diff)
			}
		})
	}
}

// cmpBlocks compares blocks, their jsonv Extra by its JSON text, and treats a nil and an
// empty content list alike (both are the empty array on the wire).
var cmpBlocks = cmp.Options{
	cmp.Comparer(func(a, b *jsonv.Object) bool {
		x, _ := jsonv.Marshal(a)
		y, _ := jsonv.Marshal(b)
		return string(x) == string(y)
	}),
	cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Content" }, cmp.Transformer("nilEmpty", func(bs []content.Block) []content.Block {
		if bs == nil {
			return []content.Block{}
		}
		return bs
	})),
}

// TestFromValueErrors checks that a malformed block is refused with a message naming the
// member at fault, and nothing is half-decoded.
func TestFromValueErrors(t *testing.T) {
	tests := []struct {
		wire string
		want string
	}{
		{`"text"`, "content block must be an object, got string"},
		{`{}`, `content block: "type" must be a string`},
		{`{"type":1}`, `content block: "type" must be a string`},
		{`{"type":"text"}`, `text block: "text" must be a string`},
		{`{"type":"reasoning","text":null}`, `reasoning block: "text" must be a string`},
		{`{"type":"tool-call","name":"x","arguments":"{}"}`, `tool-call block: "id" must be a string`},
		{`{"type":"tool-call","id":"c","arguments":"{}"}`, `tool-call block: "name" must be a string`},
		{`{"type":"tool-call","id":"c","name":"x","arguments":{}}`, `tool-call block: "arguments" must be a string`},
		{`{"type":"tool-result","content":[]}`, `tool-result block: "toolCallId" must be a string`},
		{`{"type":"tool-result","toolCallId":"c"}`, `tool-result block: "content" must be an array of blocks`},
		{`{"type":"tool-result","toolCallId":"c","content":{}}`, "tool-result block: content must be an array of blocks, got object"},
		{`{"type":"tool-result","toolCallId":"c","content":[{"type":"text"}]}`, `tool-result block: content[0]: text block: "text" must be a string`},
		{`{"type":"tool-result","toolCallId":"c","content":[],"isError":"yes"}`, `tool-result block: "isError" must be a boolean`},
		{`{"type":"image"}`, `image block: "attachment" must be an object`},
		{`{"type":"image","attachment":{"mediaType":"image/png"}}`, `image attachment block: "attachmentId" must be a string`},
		{`{"type":"image","attachment":{"attachmentId":"a"}}`, `image attachment block: "mediaType" must be a string`},
	}
	for _, tt := range tests {
		v, err := jsonv.Parse([]byte(tt.wire))
		if err != nil {
			t.Fatal(err)
		}
		b, err := content.FromValue(v)
		if err == nil || err.Error() != tt.want {
			t.Errorf("FromValue(%s) = %+v, %v\nwant error %q", tt.wire, b, err, tt.want)
		}
	}
	if _, err := content.ListFromValue(map[string]any{}); err == nil || !strings.HasPrefix(err.Error(), "content must be an array of blocks") {
		t.Errorf("ListFromValue(object) = %v", err)
	}
	var b content.Block
	if err := b.UnmarshalJSON([]byte(`{"type":"text","text":"a","text":"b"}`)); err == nil {
		t.Error("a block with a duplicate member was accepted")
	}
}

// block generates blocks of every kind, nesting tool results up to depth.
func block(depth int) *rapid.Generator[content.Block] {
	return rapid.Custom(func(t *rapid.T) content.Block {
		kinds := []string{content.TypeText, content.TypeReasoning, content.TypeToolCall, content.TypeImage, "custom"}
		if depth > 0 {
			kinds = append(kinds, content.TypeToolResult)
		}
		str := rapid.StringMatching(`[a-z0-9 "\\{}:é\n]{0,12}`)
		switch rapid.SampledFrom(kinds).Draw(t, "kind") {
		case content.TypeText:
			return content.Text(str.Draw(t, "text"))
		case content.TypeReasoning:
			return content.Reasoning(str.Draw(t, "text"))
		case content.TypeToolCall:
			return content.ToolCall(str.Draw(t, "id"), str.Draw(t, "name"), str.Draw(t, "args"))
		case content.TypeImage:
			return content.Block{Type: content.TypeImage, Image: &content.ImageRef{
				AttachmentID: str.Draw(t, "att"), MediaType: "image/png",
				Bytes: rapid.Int64Range(0, 1<<40).Draw(t, "bytes"), Width: rapid.IntRange(0, 1<<14).Draw(t, "w"), Height: rapid.IntRange(0, 1<<14).Draw(t, "h"),
				Name: str.Draw(t, "name"),
			}}
		case content.TypeToolResult:
			inner := rapid.SliceOfN(block(depth-1), 0, 3).Draw(t, "content")
			return content.ToolResult(str.Draw(t, "call"), inner, rapid.Bool().Draw(t, "isError"))
		default:
			extra := &jsonv.Object{}
			for i, v := range rapid.SliceOfN(str, 0, 3).Draw(t, "members") {
				extra.Set("m"+string(rune('a'+i)), v)
			}
			return content.Block{Type: "custom-" + rapid.StringMatching(`[a-z]{1,5}`).Draw(t, "type"), Extra: extra}
		}
	})
}

// TestRoundTripProperty: every block survives the wire unchanged, and its wire text is
// stable (encoding the decoded block gives the same bytes).
func TestRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := block(3).Draw(t, "block")
		wire, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		var back content.Block
		if err := json.Unmarshal(wire, &back); err != nil {
			t.Fatalf("%s: %v", wire, err)
		}
		if diff := cmp.Diff(b, back, cmpBlocks); diff != "" {
			t.Fatalf("round trip of %s (-want +got):\n%s", wire, diff)
		}
		again, _ := json.Marshal(back)
		if string(again) != string(wire) {
			t.Fatalf("wire text changed:\n%s\n%s", wire, again)
		}
	})
}

// TestCloneProperty: a clone is deep — changing everything reachable from the clone leaves
// the original's wire text as it was — for blocks and messages.
func TestCloneProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := content.Message{ID: "m1", Role: content.RoleUser, Content: rapid.SliceOfN(block(3), 0, 4).Draw(t, "content"),
			Source: &content.Source{Kind: "tool", CallID: "c1"}}
		before, _ := json.Marshal(m)
		c := content.CloneMessages([]content.Message{m})[0]
		scribble(c.Content)
		c.Source.CallID = "changed"
		if after, _ := json.Marshal(m); string(after) != string(before) {
			t.Fatalf("changing the clone changed the original:\n%s\n%s", before, after)
		}
	})
	if content.Clone(nil) != nil || content.CloneMessages(nil) != nil {
		t.Error("a nil list cloned to a non-nil one")
	}
}

// scribble changes every field reachable from blocks.
func scribble(blocks []content.Block) {
	for i := range blocks {
		b := &blocks[i]
		b.Text += "x"
		if b.Image != nil {
			b.Image.AttachmentID += "x"
		}
		if b.Extra != nil {
			b.Extra.Set("scribbled", true)
		}
		scribble(b.Content)
		if len(b.Content) > 0 {
			b.Content[0] = content.Text("replaced")
		}
	}
}

// FuzzBlockJSON feeds arbitrary text to Block.UnmarshalJSON: it never panics, and whatever
// it accepts re-encodes to a text that decodes to the same encoding.
func FuzzBlockJSON(f *testing.F) {
	for _, s := range []string{
		`{"type":"text","text":"hi"}`,
		`{"type":"tool-call","id":"c1","name":"read","arguments":"{}"}`,
		`{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"ok"}],"isError":true}`,
		`{"type":"image","attachment":{"attachmentId":"a","mediaType":"image/png","bytes":1,"width":1,"height":1}}`,
		`{"type":"x-custom","a":[1,{"b":null}]}`,
		`{"type":"tool-result","toolCallId":"c","content":[{"type":"tool-result","toolCallId":"d","content":[]}]}`,
		`[]`, `{"type":"text"}`, `{"type":"image","attachment":{"attachmentId":"a","mediaType":"m","bytes":1e308}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b content.Block
		if err := b.UnmarshalJSON([]byte(s)); err != nil {
			return
		}
		wire, err := b.MarshalJSON()
		if err != nil {
			return // e.g. an image size no JSON number holds exactly; refused, not corrupted
		}
		var back content.Block
		if err := back.UnmarshalJSON(wire); err != nil {
			t.Fatalf("re-encoded block %s does not decode: %v", wire, err)
		}
		again, err := back.MarshalJSON()
		if err != nil || string(again) != string(wire) {
			t.Fatalf("encoding is not stable:\n%s\n%s (%v)", wire, again, err)
		}
	})
}
