package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
	"github.com/dsh-go/dsh/tools/fs"
)

// imageParts returns the data URLs of the image_url parts of the user messages of one
// request body.
func imageParts(t *testing.T, body map[string]any) []string {
	t.Helper()
	var urls []string
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		msg := m.(map[string]any)
		parts, ok := msg["content"].([]any)
		if !ok {
			continue
		}
		if msg["role"] != "user" {
			t.Fatalf("a %v message has array content: %v", msg["role"], msg)
		}
		for _, p := range parts {
			part := p.(map[string]any)
			if part["type"] == "image_url" {
				urls = append(urls, part["image_url"].(map[string]any)["url"].(string))
			}
		}
	}
	return urls
}

// TestImageReachesTheModel: read_image's image is stored beside the session log and sent to
// an OpenAI-compatible server as an image_url part in the next request, and again in the
// first request of the resumed session.
func TestImageReachesTheModel(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 4, 3))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "pic.png"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	wantURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())

	store, err := session.Open(t.TempDir(), session.Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	log, err := store.Create(ctx, session.Header{Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	id := log.Header().ID
	reg, err := tool.NewRegistry(tool.Config{})
	if err != nil {
		t.Fatal(err)
	}
	undo, err := fs.Install(reg, fs.Config{Root: ws, Images: log.Attachments()})
	if err != nil {
		t.Fatal(err)
	}
	defer undo()

	srv := newSSEServer(t,
		sseResponse{events: []string{toolDelta(0, "call_1", "read_image", `{"file_path":"pic.png"}`), delta(`{}`, "tool_calls")}, done: true},
		sseResponse{events: []string{delta(`{"role":"assistant","content":"a gray picture"}`, ""), delta(`{}`, "stop")}, done: true},
		sseResponse{events: []string{delta(`{"role":"assistant","content":"still gray"}`, ""), delta(`{}`, "stop")}, done: true},
	)
	a, err := New(Config{Registry: reg, Model: srv.model(t), Log: log, Attachments: log.Attachments(), Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(ctx, "what is in pic.png?")
	if err != nil || res.Text() != "a gray picture" {
		t.Fatalf("run = %+v, %v", res, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if got := imageParts(t, reqs[0]); len(got) != 0 {
		t.Fatalf("the first request has images: %d", len(got))
	}
	if got := imageParts(t, reqs[1]); len(got) != 1 || got[0] != wantURL {
		t.Fatalf("second request images = %.80q, want the file", got)
	}
	toolMsg, _ := json.Marshal(reqs[1]["messages"])
	if !strings.Contains(string(toolMsg), `[image: image/png, 4x3 px, attached]`) {
		t.Fatalf("the tool message does not announce the image: %s", toolMsg)
	}

	// The attachment lives beside the log, and a resumed session sends it again.
	if _, err := os.Stat(log.Attachments().(*session.DirAttachments).Dir()); err != nil {
		t.Fatal(err)
	}
	b, err := Resume(ctx, store, id, Config{Registry: reg, Model: srv.model(t), Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if res, err := b.Run(ctx, "and now?"); err != nil || res.Text() != "still gray" {
		t.Fatalf("resumed run = %+v, %v", res, err)
	}
	if got := imageParts(t, srv.requests()[2]); len(got) != 1 || got[0] != wantURL {
		t.Fatalf("resumed request images = %.80q, want the file", got)
	}
}
