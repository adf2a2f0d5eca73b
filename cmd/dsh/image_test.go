package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/llm/openai"
)

// requestImages returns the data URLs of the image_url parts of one request body.
func requestImages(body map[string]any) []string {
	var urls []string
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		parts, _ := m.(map[string]any)["content"].([]any)
		for _, p := range parts {
			if part := p.(map[string]any); part["type"] == "image_url" {
				urls = append(urls, part["image_url"].(map[string]any)["url"].(string))
			}
		}
	}
	return urls
}

func writePNG(t *testing.T, path string, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRunImages: `dsh run` against a local server — read_image called natively and from a
// run_code program (the Starlark backend) — sends the images as image_url parts, keeps
// them beside the session log, and sends them again when the session is resumed.
func TestRunImages(t *testing.T) {
	s := newSandbox(t)
	pic := writePNG(t, filepath.Join(s.ws, "pic.png"), 5, 4)
	other := writePNG(t, filepath.Join(s.ws, "other.png"), 2, 7)
	url := func(b []byte) string { return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b) }
	program, _ := json.Marshal(map[string]string{"description": "Look at other.png",
		"code": "r = await tools.read_image({\"file_path\": \"other.png\"})\nreturn r[\"image\"][\"width\"]"})
	srv := newChatServer(t,
		toolReply("Looking.", "call_1", "read_image", `{"file_path":"pic.png"}`),
		toolReply("And the other one.", "call_2", "run_code", string(program)),
		textReply("Two gray pictures."),
		textReply("Still two."),
	)
	s.env["DSH_CODE_RUNTIME"] = "starlark"
	r := s.dsh("run", "--base-url", srv.srv.URL+"/v1", "--model", "test-model", "--mode", "both", "Describe the pictures").want(t, 0)
	mustContain(t, "transcript", r.stderr, "Read image pic.png")
	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	if got := requestImages(reqs[1]); len(got) != 1 || got[0] != url(pic) {
		t.Fatalf("second request images = %.60q", got)
	}
	if got := requestImages(reqs[2]); len(got) != 2 || got[0] != url(pic) || got[1] != url(other) {
		t.Fatalf("third request images = %.60q", got)
	}
	id, _ := sessionID(t, r.stderr)
	dirs, _ := filepath.Glob(filepath.Join(s.home, "sessions", "*", "*", "attachments", "*"))
	if len(dirs) != 2 {
		t.Fatalf("attachment files = %v, want the two images", dirs)
	}

	r = s.dsh("run", "--base-url", srv.srv.URL+"/v1", "--model", "test-model", "--resume", id, "And now?").want(t, 0)
	if got := requestImages(srv.requests()[3]); len(got) != 2 || got[0] != url(pic) || got[1] != url(other) {
		t.Fatalf("resumed request images = %.60q", got)
	}
}

// TestReadImageRefusedForTextOnlyModel: with DeepSeek's text-only model, read_image refuses
// with the reason instead of storing an image the model cannot see.
func TestReadImageRefusedForTextOnlyModel(t *testing.T) {
	if got := imageRefusal(nil); got != "" {
		t.Fatalf("no model: %q", got)
	}
	m, err := openai.New(openai.Config{APIKey: "sk-test", Model: "deepseek-v4-pro"})
	if err != nil {
		t.Fatal(err)
	}
	if got := imageRefusal(m); !strings.Contains(got, `model "deepseek-v4-pro" does not accept image input`) {
		t.Fatalf("refusal = %q", got)
	}
	local, err := openai.New(openai.Config{BaseURL: "http://localhost:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := imageRefusal(local); got != "" {
		t.Fatalf("a local endpoint is refused: %q", got)
	}
}
