package mcp

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"strings"

	"golang.org/x/image/webp"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
)

// ImageStore keeps the images MCP tools return, content-addressed, and returns the id a
// content.ImageRef carries; a session's attachment store (session.Attachments) is one. It
// must be safe for concurrent use and return only once the image is durable.
type ImageStore interface {
	PutAttachment(mediaType string, data []byte) (id string, err error)
}

// ImageReader reads a stored attachment by id; session.Attachments is one. A Server uses
// it to send image results to its clients.
type ImageReader interface {
	ReadAttachment(id string) (mediaType string, data []byte, err error)
}

// maxImageBytes bounds one decoded image an MCP server may hand the model (20 MiB).
const maxImageBytes = 20 << 20

// imageConfigs decodes the dimensions of the image types that are admitted.
var imageConfigs = map[string]func(io.Reader) (image.Config, error){
	"image/png":  png.DecodeConfig,
	"image/jpeg": jpeg.DecodeConfig,
	"image/gif":  gif.DecodeConfig,
	"image/webp": webp.DecodeConfig,
}

// ProjectContent returns the model-visible content of an MCP content array: the text of
// ProjectText, except that with an image store every image block whose base64 data is a
// PNG, JPEG, GIF or WebP image of the declared type is stored and becomes an image block
// in place (the text around it stays text). An image that cannot be admitted stays a note
// that says why.
func ProjectContent(blocks []any, raw string, images ImageStore) []content.Block {
	if images == nil {
		return content.Texts(ProjectText(blocks, raw))
	}
	var out []content.Block
	var pending []any // blocks projected as text, in order
	flush := func() {
		if len(pending) > 0 {
			out = append(out, content.Text(ProjectText(pending, raw)))
			pending = nil
		}
	}
	for _, v := range blocks {
		b, ok := v.(*jsonv.Object)
		if typ, _ := get0(b, ok, "type").(string); !ok || typ != "image" {
			pending = append(pending, v)
			continue
		}
		ref, err := admitImage(b, images)
		if err != nil {
			pending = append(pending, jsonv.NewObject(
				jsonv.Member{Name: "type", Value: "text"},
				jsonv.Member{Name: "text", Value: "[image unavailable: " + mediaType(b) + "; " + err.Error() + "]"}))
			continue
		}
		flush()
		out = append(out, content.Block{Type: content.TypeImage, Image: ref})
	}
	flush()
	if len(out) == 0 {
		return content.Texts(ProjectText(nil, raw))
	}
	return out
}

func get0(b *jsonv.Object, ok bool, name string) any {
	if !ok {
		return nil
	}
	return get(b, name)
}

// admitImage stores one MCP image block and returns its reference.
func admitImage(b *jsonv.Object, images ImageStore) (*content.ImageRef, error) {
	declared, _ := get(b, "mimeType").(string)
	decodeConfig, ok := imageConfigs[strings.ToLower(declared)]
	if !ok {
		return nil, fmt.Errorf("only PNG, JPEG, GIF and WebP images are admitted")
	}
	text, _ := get(b, "data").(string)
	if base64.StdEncoding.DecodedLen(len(text)) > maxImageBytes+3 {
		return nil, fmt.Errorf("the image is larger than the %d-byte limit", maxImageBytes)
	}
	data, err := base64.StdEncoding.DecodeString(text)
	if err != nil || len(data) == 0 {
		return nil, fmt.Errorf("its data is not base64 image bytes")
	}
	cfg, err := decodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("its data is not an image of type %s", declared)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, fmt.Errorf("the image has no pixels (%dx%d)", cfg.Width, cfg.Height)
	}
	mt := strings.ToLower(declared)
	id, err := images.PutAttachment(mt, data)
	if err != nil {
		return nil, fmt.Errorf("storing it failed: %v", err)
	}
	return &content.ImageRef{AttachmentID: id, MediaType: mt, Bytes: int64(len(data)), Width: cfg.Width, Height: cfg.Height}, nil
}
