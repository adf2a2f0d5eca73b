package mcp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/mcp"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestProjectContentImages(t *testing.T) {
	img := pngOf(t, 3, 2)
	b64 := base64.StdEncoding.EncodeToString(img)
	id := session.AttachmentID(img)
	note := func(mt, why string) content.Block {
		return content.Text("[image unavailable: " + mt + "; " + why + "]")
	}
	tests := []struct {
		name  string
		json  string
		store bool
		want  []content.Block
	}{
		{name: "an image between texts", store: true,
			json: `[{"type":"text","text":"before"},{"type":"image","mimeType":"image/png","data":"` + b64 + `"},{"type":"text","text":"after"}]`,
			want: []content.Block{content.Text("before"), {Type: content.TypeImage, Image: &content.ImageRef{AttachmentID: id, MediaType: "image/png", Bytes: int64(len(img)), Width: 3, Height: 2}}, content.Text("after")}},
		{name: "only an image", store: true,
			json: `[{"type":"image","mimeType":"IMAGE/PNG","data":"` + b64 + `"}]`,
			want: []content.Block{{Type: content.TypeImage, Image: &content.ImageRef{AttachmentID: id, MediaType: "image/png", Bytes: int64(len(img)), Width: 3, Height: 2}}}},
		{name: "an unsupported type", store: true, json: `[{"type":"image","mimeType":"image/bmp","data":"Qk0="}]`,
			want: []content.Block{note("image/bmp", "only PNG, JPEG, GIF and WebP images are admitted")}},
		{name: "data that is not base64", store: true, json: `[{"type":"image","mimeType":"image/png","data":"%%%"}]`,
			want: []content.Block{note("image/png", "its data is not base64 image bytes")}},
		{name: "data of another type", store: true, json: `[{"type":"text","text":"a"},{"type":"image","mimeType":"image/jpeg","data":"` + b64 + `"}]`,
			want: []content.Block{content.Text("a\n[image unavailable: image/jpeg; its data is not an image of type image/jpeg]")}},
		{name: "no data", store: true, json: `[{"type":"image","mimeType":"image/png"}]`,
			want: []content.Block{note("image/png", "its data is not base64 image bytes")}},
		{name: "nothing", store: true, json: `[]`, want: content.Texts("(raw returned no model-visible content)")},
		{name: "without a store the image is a note", json: `[{"type":"image","mimeType":"image/png","data":"` + b64 + `"}]`,
			want: content.Texts("[image unavailable: image/png; this result was not admitted to durable model context; raw image data remains available to programmatic callers]")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := jsonv.ParseString(tt.json)
			if err != nil {
				t.Fatal(err)
			}
			var store *session.MemoryAttachments
			var images mcp.ImageStore
			if tt.store {
				store = session.NewMemoryAttachments()
				images = store
			}
			got := mcp.ProjectContent(v.([]any), "raw", images)
			if len(got) != len(tt.want) {
				t.Fatalf("content = %+v, want %+v", got, tt.want)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.Type != w.Type || g.Text != w.Text || (g.Image == nil) != (w.Image == nil) || (g.Image != nil && *g.Image != *w.Image) {
					t.Fatalf("block %d = %+v (%+v), want %+v (%+v)", i, g, g.Image, w, w.Image)
				}
				if g.Image != nil {
					if _, data, err := store.ReadAttachment(g.Image.AttachmentID); err != nil || !bytes.Equal(data, img) {
						t.Fatalf("stored image: %v", err)
					}
				}
			}
		})
	}
}

// TestServerEverythingImages: the reference MCP server's image result reaches the model as
// an image once the host has an image store.
func TestServerEverythingImages(t *testing.T) {
	store := session.NewMemoryAttachments()
	e := newEnv(t, mcp.Options{Images: store})
	e.mount("everything", everythingConfig(t))
	res := e.call(context.Background(), mcp.PublicToolName("everything", "get-tiny-image"), `{}`)
	if res.IsError || len(res.Content) != 3 || res.Content[1].Type != content.TypeImage {
		t.Fatalf("result = %+v", res)
	}
	if res.Content[0].Text != "Here's the image you requested:" || res.Content[2].Text != "The image above is the MCP logo." {
		t.Fatalf("texts = %q, %q", res.Content[0].Text, res.Content[2].Text)
	}
	ref := res.Content[1].Image
	mediaType, data, err := store.ReadAttachment(ref.AttachmentID)
	if err != nil || mediaType != "image/png" || ref.MediaType != "image/png" || int64(len(data)) != ref.Bytes || ref.Width == 0 || ref.Height == 0 {
		t.Fatalf("stored %s %d bytes (%v), ref %+v", mediaType, len(data), err, ref)
	}
	if !strings.HasPrefix(ref.AttachmentID, "sha256:") {
		t.Fatalf("id = %q", ref.AttachmentID)
	}
}

// TestServerSendsImages: with an image reader, a served tool's image result reaches the
// MCP client as an image; an attachment that cannot be read is described.
func TestServerSendsImages(t *testing.T) {
	f := newFixture(t)
	store := session.NewMemoryAttachments()
	img := pngOf(t, 2, 2)
	id, err := store.PutAttachment(session.MediaPNG, img)
	if err != nil {
		t.Fatal(err)
	}
	missing := session.AttachmentID([]byte("gone"))
	if _, err := f.reg.Register(&tool.Definition{
		Name: "pic", Parameters: map[string]any{"type": "object"},
		Output: tool.Output{Schema: map[string]any{}, Render: func(_, _ any) ([]content.Block, error) {
			return []content.Block{content.Text("a picture:"),
				{Type: content.TypeImage, Image: &content.ImageRef{AttachmentID: id, MediaType: "image/png"}},
				{Type: content.TypeImage, Image: &content.ImageRef{AttachmentID: missing, MediaType: "image/png"}}}, nil
		}},
		Execute: func(context.Context, *tool.Call) (any, error) { return "x", nil },
	}); err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(f.reg, mcp.ServerOptions{Images: store})
	defer s.Close()
	cs := connectInMemory(t, s, nil)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "pic"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 3 {
		t.Fatalf("content = %#v", res.Content)
	}
	if ic, ok := res.Content[1].(*sdk.ImageContent); !ok || ic.MIMEType != "image/png" || !bytes.Equal(ic.Data, img) {
		t.Fatalf("image = %#v", res.Content[1])
	}
	if tc, ok := res.Content[2].(*sdk.TextContent); !ok || !strings.Contains(tc.Text, "[image attachment "+missing+" (image/png) unavailable: ") {
		t.Fatalf("missing image = %#v", res.Content[2])
	}
}
