package mcp

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
)

func TestPublicToolNameMatchesReference(t *testing.T) {
	// Vectors computed with the reference's publicToolName in Node.
	tests := []struct{ server, raw, want string }{
		{"fs", "read_file", "mcp__fs__read_file"},
		{"fs", "dotted.name", "mcp__fs__dotted_name_2639a46d7430"},
		{"everything", "get-sum", "mcp__everything__get-sum"},
		{"s", strings.Repeat("x", 56), "mcp__s__" + strings.Repeat("x", 56)},
		{"s", strings.Repeat("x", 57), "mcp__s__" + strings.Repeat("x", 43) + "_065b956fb9c7"},
		{"server", strings.Repeat("a", 100), "mcp__server__" + strings.Repeat("a", 38) + "_43e8831c0ff8"},
		{"srv", "héllo wörld", "mcp__srv__h_llo_w_rld_4374b68fa36e"},
		{"srv", "emoji😀tool", "mcp__srv__emoji__tool_03bb258e393a"},
		{"a", "b/c", "mcp__a__b_c_bd4f6d7ab686"},
		{"a", "b_c", "mcp__a__b_c"},
	}
	for _, tc := range tests {
		if got := PublicToolName(tc.server, tc.raw); got != tc.want {
			t.Errorf("PublicToolName(%q, %q) = %q, want %q", tc.server, tc.raw, got, tc.want)
		}
	}
}

var validPublic = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestPublicToolNameProperties(t *testing.T) {
	server := rapid.StringMatching(`[A-Za-z0-9_-]{1,32}`)
	raw := rapid.OneOf(rapid.StringMatching(`[A-Za-z0-9_.\-/ ]{0,80}`), rapid.String())
	rapid.Check(t, func(t *rapid.T) {
		s, r1, r2 := server.Draw(t, "server"), raw.Draw(t, "raw1"), raw.Draw(t, "raw2")
		p1, p2 := PublicToolName(s, r1), PublicToolName(s, r2)
		if !validPublic.MatchString(p1) {
			t.Fatalf("PublicToolName(%q, %q) = %q is not a valid function name", s, r1, p1)
		}
		if p1 != PublicToolName(s, r1) {
			t.Fatalf("not deterministic")
		}
		if r1 != r2 && p1 == p2 {
			t.Fatalf("%q and %q collide as %q", r1, r2, p1)
		}
		if clean := "mcp__" + s + "__" + r1; validPublic.MatchString(clean) && p1 != clean {
			t.Fatalf("clean name %q was rewritten to %q", clean, p1)
		}
	})
}

func parse(t testing.TB, s string) any {
	v, err := jsonv.ParseString(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestProjectText(t *testing.T) {
	tests := []struct{ content, want string }{
		{`[]`, "(raw returned no model-visible content)"},
		{`[{"type":"text","text":""}]`, ""},
		{`[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, "a\nb"},
		{`[{"type":"text"}]`, "(raw returned no model-visible content)"},
		{`[{"type":"text","text":null}]`, ""},
		{`[{"type":"text","text":[1,null,"x"]}]`, "1,,x"},
		{`[{"type":"text","text":12.5}]`, "12.5"},
		{`[{"type":"image","mimeType":"image/jpeg","data":""}]`, "[image unavailable: image/jpeg; this result was not admitted to durable model context; raw image data remains available to programmatic callers]"},
		{`[{"type":"image"}]`, "[image unavailable: unknown media type; this result was not admitted to durable model context; raw image data remains available to programmatic callers]"},
		{`[{"type":"audio","mimeType":null}]`, "[audio result unsupported: unknown media type; raw audio data remains available to programmatic callers]"},
		{`[{"type":"audio","mimeType":"audio/wav"}]`, "[audio result unsupported: audio/wav; raw audio data remains available to programmatic callers]"},
		{`[{"type":"resource_link","name":null,"uri":"u"}]`, "Resource link: null (u)"},
		{`[{"type":"resource_link","name":"n"}]`, "[resource link unavailable: the MCP block is missing its name or URI]"},
		{`[{"type":"resource","resource":{}}]`, "[embedded resource unsupported; raw resource data remains available to programmatic callers]"},
		{`[{"type":"video"}]`, "[unsupported MCP content type: video]"},
		{`[{}]`, "[unsupported MCP content type: undefined]"},
		{`[{"type":7}]`, "[unsupported MCP content type: 7]"},
		{`[{"type":{"a":1}}]`, "[unsupported MCP content type: [object Object]]"},
		{`[null, 3, "s", []]`, strings.Repeat("[unsupported MCP content block: expected an object]\n", 3) + "[unsupported MCP content block: expected an object]"},
	}
	for _, tc := range tests {
		blocks := parse(t, tc.content).([]any)
		if got := ProjectText(blocks, "raw"); got != tc.want {
			t.Errorf("ProjectText(%s) = %q, want %q", tc.content, got, tc.want)
		}
	}
}

func FuzzProjectText(f *testing.F) {
	for _, s := range []string{`[]`, `[{"type":"text","text":"a"}]`, `[{"type":"image"},{"type":"resource_link","name":1,"uri":[]}]`, `[null,{"type":null}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := jsonv.ParseString(s)
		if err != nil {
			return
		}
		blocks, ok := v.([]any)
		if !ok {
			return
		}
		out := ProjectText(blocks, "t")
		if len(blocks) == 0 && out != "(t returned no model-visible content)" {
			t.Fatalf("empty content projected to %q", out)
		}
	})
}

func frames(t testing.TB, input string, limit int) (lines []string, big []*oversize) {
	r := bufio.NewReaderSize(strings.NewReader(input), 16)
	for {
		line, o, err := readFrame(r, limit)
		if err != nil {
			return
		}
		if o != nil {
			big = append(big, o)
		} else {
			lines = append(lines, string(line))
		}
	}
}

func TestReadFrame(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":7,"result":{"text":"` + strings.Repeat("x", 200) + `"}}`
	tsLong := `{"result":{"text":"` + strings.Repeat("y", 200) + `"},"jsonrpc":"2.0","id":"req-8"}`
	lines, big := frames(t, "a\n"+long+"\nb\n"+tsLong+"\nlast-without-newline", 64)
	if got := strings.Join(lines, "|"); got != "a\n|b\n|last-without-newline" {
		t.Errorf("lines = %q", got)
	}
	if len(big) != 2 {
		t.Fatalf("oversized = %d, want 2", len(big))
	}
	if big[0].size != int64(len(long)) || big[1].size != int64(len(tsLong)) {
		t.Errorf("sizes = %d, %d; want %d, %d", big[0].size, big[1].size, len(long), len(tsLong))
	}
	id, ok := big[0].responseID()
	if want, _ := jsonrpc.MakeID(float64(7)); !ok || id != want {
		t.Errorf("Go-ordered id = %v, %v", id.Raw(), ok)
	}
	id, ok = big[1].responseID()
	if want, _ := jsonrpc.MakeID("req-8"); !ok || id != want {
		t.Errorf("JS-ordered id = %v, %v", id.Raw(), ok)
	}
	_, big = frames(t, `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"`+strings.Repeat("z", 300)+`"}}`+"\n", 64)
	if _, ok := big[0].responseID(); ok {
		t.Errorf("a notification was attributed to a request")
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add("a\nb\n", 8)
	f.Add(`{"jsonrpc":"2.0","id":1,"result":{}}`+"\n", 10)
	f.Add(`{"result":1,"id":"x"}`, 4)
	f.Fuzz(func(t *testing.T, input string, limit int) {
		if limit <= 0 || limit > 1<<16 {
			return
		}
		lines, big := frames(t, input, limit)
		var total int64
		for _, l := range lines {
			if len(l) > limit {
				t.Fatalf("a %d-byte line passed the %d-byte limit", len(l), limit)
			}
			total += int64(len(l))
		}
		for _, b := range big {
			total += b.size + 1
			if len(b.head) > keepEdge || len(b.tail) > keepEdge {
				t.Fatalf("kept %d+%d bytes of an oversized frame", len(b.head), len(b.tail))
			}
			b.responseID() // must not panic
		}
		if total < int64(len(input))-int64(len(big)) || total > int64(len(input))+int64(len(big)) {
			t.Fatalf("frames cover %d bytes of %d", total, len(input))
		}
	})
}

func TestTailBuffer(t *testing.T) {
	b := newTailBuffer(8)
	b.Write([]byte("abc"))
	b.Write([]byte("defgh"))
	b.Write([]byte("ij"))
	got, dropped := b.Bytes()
	if string(got) != "cdefghij" || dropped != 2 {
		t.Errorf("Bytes() = %q, %d", got, dropped)
	}
	b.Write(bytes.Repeat([]byte("z"), 20))
	got, dropped = b.Bytes()
	if string(got) != "zzzzzzzz" || dropped != 22 {
		t.Errorf("Bytes() = %q, %d", got, dropped)
	}
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.IntRange(1, 32).Draw(t, "limit")
		b := newTailBuffer(limit)
		var all []byte
		for _, w := range rapid.SliceOf(rapid.SliceOfN(rapid.Byte(), 0, 40)).Draw(t, "writes") {
			b.Write(w)
			all = append(all, w...)
		}
		got, dropped := b.Bytes()
		want := all[max(0, len(all)-limit):]
		if !bytes.Equal(got, want) || dropped != int64(len(all)-len(want)) {
			t.Fatalf("Bytes() = %q, %d; want %q, %d", got, dropped, want, len(all)-len(want))
		}
	})
}

func TestMinimalValue(t *testing.T) {
	s := parse(t, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"array"},"c":{"enum":["x","y"]},
		"d":{"type":"object","properties":{"e":{"type":"integer"}},"required":["e"]},"opt":{"type":"string"}},
		"required":["a","b","c","d","z"]}`)
	got, _ := jsonv.Marshal(minimalValue(s, 0))
	if want := `{"a":"","b":[],"c":"x","d":{"e":0},"z":null}`; string(got) != want {
		t.Errorf("minimalValue = %s, want %s", got, want)
	}
}

// FuzzProjectContent feeds untrusted MCP content, images included, through the projection
// with an image store: it never panics, keeps every block's place, and stores only images
// whose bytes decode as the declared type.
func FuzzProjectContent(f *testing.F) {
	for _, s := range []string{`[]`, `[{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}]`,
		`[{"type":"text","text":"a"},{"type":"image","mimeType":"image/gif","data":"R0lGODlhAQABAAAAACw="},{"type":"text","text":"b"}]`,
		`[{"type":"image","mimeType":7,"data":null},null]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := jsonv.ParseString(s)
		if err != nil {
			return
		}
		blocks, ok := v.([]any)
		if !ok {
			return
		}
		store := &memImages{}
		out := ProjectContent(blocks, "t", store)
		if len(out) == 0 {
			t.Fatal("no content")
		}
		images := 0
		for _, b := range out {
			if b.Type == content.TypeImage {
				images++
				if b.Image == nil || b.Image.Width <= 0 || b.Image.Height <= 0 {
					t.Fatalf("image block %+v", b.Image)
				}
			}
		}
		if images != store.n {
			t.Fatalf("%d image blocks, %d stored", images, store.n)
		}
	})
}

// memImages counts the images stored and names them by count.
type memImages struct{ n int }

func (m *memImages) PutAttachment(string, []byte) (string, error) {
	m.n++
	return fmt.Sprintf("img-%d", m.n), nil
}
