package openai

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/llm"
	"github.com/dsh-go/dsh/session"
)

func TestRequestBodyImages(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n<pixels>")
	store := session.NewMemoryAttachments()
	id, err := store.PutAttachment(session.MediaPNG, png)
	if err != nil {
		t.Fatal(err)
	}
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	img := content.Block{Type: content.TypeImage, Image: &content.ImageRef{AttachmentID: id, MediaType: "image/png", Bytes: int64(len(png)), Width: 3, Height: 2}}
	lost := content.Block{Type: content.TypeImage, Image: &content.ImageRef{AttachmentID: session.AttachmentID([]byte("gone")), MediaType: "image/png", Width: 1, Height: 1}}
	req := llm.Request{
		Messages: []content.Message{
			{Role: content.RoleUser, Content: []content.Block{content.Text("look <here>: "), img, content.Text(" and "), lost}},
			{Role: content.RoleAssistant, Content: []content.Block{content.ToolCall("c1", "read_image", `{}`), content.ToolCall("c2", "read", `{}`)}},
			{Role: content.RoleUser, Content: []content.Block{
				content.ToolResult("c1", []content.Block{content.Text("an image"), img}, false),
				content.ToolResult("c2", content.Texts("plain"), false),
			}},
		},
		Attachments: store,
	}
	wantImages := `{"role":"user","content":[{"type":"text","text":"look <here>: "},{"type":"image_url","image_url":{"url":"` + dataURL + `"}},` +
		`{"type":"text","text":" and [image unavailable: attachment ` + lost.Image.AttachmentID + `: attachment not found]"}]},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"read_image","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"read","arguments":"{}"}}]},` +
		`{"role":"tool","content":"an image[image: image/png, 3x2 px, attached]","tool_call_id":"c1"},` +
		`{"role":"tool","content":"plain","tool_call_id":"c2"},` +
		`{"role":"user","content":[{"type":"text","text":"The images attached to the tool results above, in order:"},{"type":"image_url","image_url":{"url":"` + dataURL + `"}}]}]`
	wantText := `{"role":"user","content":"look <here>: [image content] and [image content]"},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"read_image","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"read","arguments":"{}"}}]},` +
		`{"role":"tool","content":"an image[image content]","tool_call_id":"c1"},` +
		`{"role":"tool","content":"plain","tool_call_id":"c2"}]`
	for _, tc := range []struct {
		name string
		cfg  Config
		att  bool
		want string
	}{
		{"an endpoint with image input", Config{BaseURL: "http://localhost:1/v1"}, true, wantImages},
		{"image input forced on", Config{BaseURL: "https://api.deepseek.com", APIKey: "k", ImageInput: ImageInputOn}, true, wantImages},
		{"DeepSeek's flash model takes images", Config{BaseURL: "https://api.deepseek.com", APIKey: "k", Model: "deepseek-flash"}, true, wantImages},
		{"DeepSeek's pro model takes text only", Config{BaseURL: "https://api.deepseek.com", APIKey: "k", Model: "deepseek-v4-pro"}, true, wantText},
		{"image input off", Config{BaseURL: "http://localhost:1/v1", ImageInput: ImageInputOff}, true, wantText},
		{"no attachment reader", Config{BaseURL: "http://localhost:1/v1"}, false, wantText},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := req
			if !tc.att {
				r.Attachments = nil
			}
			body, err := m.requestBody(r)
			if err != nil {
				t.Fatal(err)
			}
			_, messages, _ := strings.Cut(string(body), `"messages":[`)
			messages, _, _ = strings.Cut(messages, `,"stream":`)
			if messages != tc.want {
				t.Fatalf("messages:\n got  %s\n want %s", messages, tc.want)
			}
		})
	}
	if _, err := New(Config{BaseURL: "http://localhost:1/v1", ImageInput: "yes"}); err == nil || !strings.Contains(err.Error(), `image input "yes" must be "on", "off" or empty (auto)`) {
		t.Fatalf("bad ImageInput: %v", err)
	}
}

// TestRequestImageBudget: the newest images are sent up to the request's budget of images
// and bytes; older ones become notes.
func TestRequestImageBudget(t *testing.T) {
	store := session.NewMemoryAttachments()
	var msgs []content.Message
	var urls []string
	for i := range 3 {
		data := []byte("\x89PNG\r\n\x1a\n" + strings.Repeat("x", i)) // 8, 9, 10 bytes
		id, err := store.PutAttachment(session.MediaPNG, data)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, "data:image/png;base64,"+base64.StdEncoding.EncodeToString(data))
		msgs = append(msgs, content.Message{Role: content.RoleUser, Content: []content.Block{
			{Type: content.TypeImage, Image: &content.ImageRef{AttachmentID: id, MediaType: "image/png", Bytes: int64(len(data)), Width: 1, Height: 1}}}})
	}
	for _, tc := range []struct {
		name    string
		cfg     Config
		sent    []string
		omitted int
	}{
		{"the default budget sends all", Config{}, urls, 0},
		{"two images", Config{MaxRequestImages: 2}, urls[1:], 1},
		{"eighteen bytes", Config{MaxRequestImageBytes: 18}, urls[2:], 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.BaseURL = "http://localhost:1/v1"
			m, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			body, err := m.requestBody(llm.Request{Messages: msgs, Attachments: store})
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range urls {
				if want := slices.Contains(tc.sent, u); strings.Contains(string(body), u+`"`) != want {
					t.Errorf("image %.40s sent = %v, want %v", u, !want, want)
				}
			}
			if got := strings.Count(string(body), "left out of this request: the newer images use up its budget"); got != tc.omitted {
				t.Errorf("%d notes, want %d: %s", got, tc.omitted, body)
			}
		})
	}
}
