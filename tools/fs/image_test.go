package fs

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/session"
	"github.com/dsh-go/dsh/tool"
)

// testImage draws a w×h gradient, so scaling has something to do.
func testImage(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := img.PixOffset(x, y)
			copy(img.Pix[i:i+4], []uint8{uint8(x * 255 / w), uint8(y * 255 / h), 128, 255})
		}
	}
	return img
}

// encodeImage returns a real w×h image file of the given format ("png", "jpeg", "gif",
// "webp"). WebP files are made by cwebp (scripts/test-deps.sh installs it), since Go has
// no WebP encoder.
func encodeImage(t *testing.T, format string, w, h int) []byte {
	t.Helper()
	img := testImage(w, h)
	var buf bytes.Buffer
	var err error
	switch format {
	case "png":
		err = png.Encode(&buf, img)
	case "jpeg":
		err = jpeg.Encode(&buf, img, nil)
	case "gif":
		err = gif.Encode(&buf, img, nil)
	case "webp":
		dir := t.TempDir()
		in, out := filepath.Join(dir, "in.png"), filepath.Join(dir, "out.webp")
		if err := png.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("cwebp", "-quiet", "-lossless", in, "-o", out)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cwebp (run scripts/test-deps.sh): %v %s", err, msg)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return data
	default:
		t.Fatalf("unknown format %q", format)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// countingStore is a memory attachment store that counts the distinct images put.
type countingStore struct {
	*session.MemoryAttachments
	mu  sync.Mutex
	ids map[string]bool
}

func (c *countingStore) PutAttachment(mediaType string, data []byte) (string, error) {
	id, err := c.MemoryAttachments.PutAttachment(mediaType, data)
	if err == nil {
		c.mu.Lock()
		c.ids[id] = true
		c.mu.Unlock()
	}
	return id, err
}

func (c *countingStore) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ids)
}

func newImageEnv(t *testing.T, cfg Config) (*env, *countingStore) {
	t.Helper()
	store := &countingStore{MemoryAttachments: session.NewMemoryAttachments(), ids: map[string]bool{}}
	cfg.Images = store
	return newEnv(t, cfg), store
}

// imageResult returns the value and the image block of a successful read_image.
func imageResult(t *testing.T, res *tool.Result) (ImageOutput, content.ImageRef) {
	t.Helper()
	mustOK(t, res)
	if len(res.Content) != 2 || res.Content[0].Type != content.TypeText || res.Content[1].Type != content.TypeImage || res.Content[1].Image == nil {
		t.Fatalf("content = %+v, want a text and an image block", res.Content)
	}
	var out ImageOutput
	b, err := jsonv.Marshal(res.Value)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		t.Fatalf("value %s: %v", b, err)
	}
	return out, *res.Content[1].Image
}

func TestReadImage(t *testing.T) {
	tests := []struct {
		name, file, format  string
		maxSide             int // Config.ImageMaxDimension; 0 is the default
		w, h                int
		wantType            string
		wantW, wantH        int
		downscaled, samePix bool
	}{
		{name: "png", file: "a.png", format: "png", w: 40, h: 30, wantType: "image/png", wantW: 40, wantH: 30},
		{name: "jpeg", file: "b.JPG", format: "jpeg", w: 33, h: 21, wantType: "image/jpeg", wantW: 33, wantH: 21},
		{name: "jpeg extension", file: "b.jpeg", format: "jpeg", w: 10, h: 10, wantType: "image/jpeg", wantW: 10, wantH: 10},
		{name: "gif", file: "c.gif", format: "gif", w: 16, h: 64, wantType: "image/gif", wantW: 16, wantH: 64},
		{name: "webp", file: "d.webp", format: "webp", w: 50, h: 20, wantType: "image/webp", wantW: 50, wantH: 20},
		{name: "the longest side at the default cap is kept", file: "e.png", format: "png", w: 2048, h: 2, wantType: "image/png", wantW: 2048, wantH: 2},
		{name: "past the default cap is downscaled", file: "f.png", format: "png", w: 2050, h: 4, wantType: "image/png", wantW: 2048, wantH: 3, downscaled: true},
		{name: "wide png is downscaled", file: "wide.png", format: "png", maxSide: 64, w: 256, h: 64, wantType: "image/png", wantW: 64, wantH: 16, downscaled: true},
		{name: "tall jpeg stays jpeg", file: "tall.jpg", format: "jpeg", maxSide: 64, w: 75, h: 150, wantType: "image/jpeg", wantW: 32, wantH: 64, downscaled: true},
		{name: "large webp becomes png", file: "big.webp", format: "webp", maxSide: 64, w: 100, h: 10, wantType: "image/png", wantW: 64, wantH: 6, downscaled: true},
		{name: "large gif becomes png", file: "big.gif", format: "gif", maxSide: 64, w: 90, h: 90, wantType: "image/png", wantW: 64, wantH: 64, downscaled: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, store := newImageEnv(t, Config{ImageMaxDimension: tt.maxSide})
			data := encodeImage(t, tt.format, tt.w, tt.h)
			e.put(tt.file, string(data))
			out, ref := imageResult(t, e.call("read_image", `{"file_path":`+strconv.Quote(tt.file)+`}`))
			if out.Path != e.path(tt.file) || out.Image.MediaType != tt.wantType || out.Image.Width != tt.wantW || out.Image.Height != tt.wantH || out.Image.Name != tt.file {
				t.Fatalf("value = %+v", out)
			}
			if ref.AttachmentID != out.Image.AttachmentID || ref.MediaType != tt.wantType || ref.Width != tt.wantW || ref.Height != tt.wantH || ref.Bytes != int64(out.Image.Bytes) {
				t.Fatalf("image block = %+v, value %+v", ref, out.Image)
			}
			mediaType, stored, err := store.ReadAttachment(ref.AttachmentID)
			if err != nil || mediaType != tt.wantType || len(stored) != out.Image.Bytes {
				t.Fatalf("stored: %s, %d bytes, %v", mediaType, len(stored), err)
			}
			// What is stored decodes to what the value says.
			cfg, _, err := image.DecodeConfig(bytes.NewReader(stored))
			if tt.wantType != "image/webp" && (err != nil || cfg.Width != tt.wantW || cfg.Height != tt.wantH) {
				t.Fatalf("stored image decodes as %+v, %v", cfg, err)
			}
			if !tt.downscaled {
				if !bytes.Equal(stored, data) || out.Image.OriginalDimensions != nil {
					t.Fatalf("an image within the cap must be kept byte for byte (original %+v)", out.Image.OriginalDimensions)
				}
			} else if o := out.Image.OriginalDimensions; o == nil || o.Width != tt.w || o.Height != tt.h {
				t.Fatalf("originalDimensions = %+v, want %dx%d", o, tt.w, tt.h)
			}
			envelope := res0(t, e, tt.file)
			want := "<path>" + e.path(tt.file) + "</path>\n<type>image</type>\n<content>\n" + tt.wantType + " image, " +
				strconv.Itoa(tt.wantW) + "x" + strconv.Itoa(tt.wantH) + " px, " + strconv.Itoa(out.Image.Bytes) + " bytes"
			if !strings.HasPrefix(envelope, want) {
				t.Fatalf("envelope = %q, want prefix %q", envelope, want)
			}
			if tt.downscaled != strings.Contains(envelope, "(downscaled from "+strconv.Itoa(tt.w)+"x"+strconv.Itoa(tt.h)+" px; multiply") {
				t.Fatalf("envelope = %q", envelope)
			}
		})
	}
}

// res0 reads file again and returns the envelope text.
func res0(t *testing.T, e *env, file string) string {
	t.Helper()
	res := e.call("read_image", `{"file_path":`+strconv.Quote(file)+`}`)
	mustOK(t, res)
	return res.Content[0].Text
}

func TestReadImageErrors(t *testing.T) {
	png := encodeImage(t, "png", 8, 8)
	tests := []struct {
		name  string
		cfg   Config
		setup func(e *env)
		path  string
		code  string
		frags []string
	}{
		{name: "blank path", path: "  ", code: "", frags: []string{"file_path must be a non-empty string"}},
		{name: "unsupported extension", path: "x.bmp", frags: []string{`cannot read "x.bmp": read_image only accepts PNG/JPEG/WebP/GIF paths`}},
		{name: "no extension", path: "x", frags: []string{"only accepts PNG/JPEG/WebP/GIF paths"}},
		{name: "not found", path: "missing.png", code: CodeNotFound, frags: []string{"cannot read", "missing.png", "not found"}},
		{name: "directory", setup: func(e *env) { os.Mkdir(e.path("dir.png"), 0o755) }, path: "dir.png", code: CodeNotRegularFile},
		{name: "outside the workspace", path: "../outside.png", code: CodeSandboxDenied},
		{name: "over the byte cap", cfg: Config{ImageMaxBytes: 50}, setup: func(e *env) { e.put("big.png", string(png)) }, path: "big.png", code: CodeTooLarge,
			frags: []string{"bytes, more than the 50-byte limit for images"}},
		{name: "over the default byte cap (20 MiB)", setup: func(e *env) {
			// A sparse file: the size is refused before anything is read.
			if err := os.WriteFile(e.path("sparse.png"), nil, 0o644); err != nil {
				e.t.Fatal(err)
			}
			if err := os.Truncate(e.path("sparse.png"), DefaultImageMaxBytes+1); err != nil {
				e.t.Fatal(err)
			}
		}, path: "sparse.png", code: CodeTooLarge,
			frags: []string{"the file is 20971521 bytes, more than the 20971520-byte limit for images"}},
		{name: "extension and bytes disagree", setup: func(e *env) { e.put("p.jpg", string(png)) }, path: "p.jpg",
			frags: []string{`the .jpg extension declares image/jpeg, but the bytes are image/png`}},
		{name: "not an image", setup: func(e *env) { e.put("t.png", "just text") }, path: "t.png", code: CodeNotText,
			frags: []string{"is not a PNG/JPEG/WebP/GIF image"}},
		{name: "damaged image", setup: func(e *env) { e.put("d.png", string(png[:30])) }, path: "d.png",
			frags: []string{"the image/png image does not decode"}},
		{name: "too many pixels", setup: func(e *env) { e.put("huge.png", string(pngHeader(10000, 6000))) }, path: "huge.png", code: CodeTooLarge,
			frags: []string{"the image (10000x6000) exceeds the 50000000-pixel decoded-size limit"}},
		{name: "refused for the model", cfg: Config{ImageRefusal: `model "deepseek-chat" takes no image input`}, setup: func(e *env) { e.put("ok.png", string(png)) },
			path: "ok.png", frags: []string{`cannot read "ok.png" as an image: model "deepseek-chat" takes no image input`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, store := newImageEnv(t, tt.cfg)
			if tt.setup != nil {
				tt.setup(e)
			}
			res := e.call("read_image", `{"file_path":`+strconv.Quote(tt.path)+`}`)
			if !res.IsError {
				t.Fatalf("call succeeded: %+v", res.Content)
			}
			if tt.code != "" {
				wantErr(t, res, tt.code, tt.frags...)
			}
			for _, f := range tt.frags {
				if !strings.Contains(res.Error.Message, f) {
					t.Errorf("message %q does not contain %q", res.Error.Message, f)
				}
			}
			if n := store.count(); n != 0 {
				t.Fatalf("a refused read stored %d images", n)
			}
		})
	}
}

func TestReadImageNeedsAStore(t *testing.T) {
	e := newEnv(t, Config{})
	if e.tools.ReadImage() != nil || len(e.tools.Definitions()) != 3 {
		t.Fatal("read_image exists without an image store")
	}
	e2, _ := newImageEnv(t, Config{})
	if defs := e2.tools.Definitions(); len(defs) != 4 || defs[3].Name != "read_image" || !defs[3].ConcurrencySafe(tool.ParseArguments(`{"file_path":"a.png"}`)) {
		t.Fatalf("definitions = %d, the last %q", len(defs), defs[len(defs)-1].Name)
	}
}

func TestReadImageStoreFailure(t *testing.T) {
	e := newEnv(t, Config{Images: failingStore{}})
	e.put("a.png", string(encodeImage(t, "png", 4, 4)))
	res := e.call("read_image", `{"file_path":"a.png"}`)
	if !res.IsError || !strings.Contains(res.Error.Message, `cannot read "`+e.path("a.png")+`" as an image: storing it failed: disk full`) {
		t.Fatalf("result = %+v", res)
	}
}

type failingStore struct{}

func (failingStore) PutAttachment(string, []byte) (string, error) {
	return "", errors.New("disk full")
}

// TestReadImageConcurrent reads the same and different images from many goroutines: each
// read stores its image once, under its content address.
func TestReadImageConcurrent(t *testing.T) {
	e, store := newImageEnv(t, Config{})
	for i := range 4 {
		e.put("img"+strconv.Itoa(i)+".png", string(encodeImage(t, "png", 10+i, 10)))
	}
	var wg sync.WaitGroup
	ids := make([]string, 16)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := e.reg.Execute(context.Background(), toolInput("c"+strconv.Itoa(i), "read_image", `{"file_path":"img`+strconv.Itoa(i%4)+`.png"}`))
			if !res.IsError {
				ids[i] = res.Content[1].Image.AttachmentID
			}
		}()
	}
	wg.Wait()
	for i, id := range ids {
		if id == "" || id != ids[i%4] {
			t.Fatalf("ids = %q", ids)
		}
	}
	if n := store.count(); n != 4 {
		t.Fatalf("store holds %d images, want 4", n)
	}
}

// pngHeader returns the signature and IHDR chunk of a w×h 8-bit grayscale PNG: what
// DecodeConfig reads. The pixel data is missing, so only a check before decoding passes.
func pngHeader(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 0, 0, 0, 0) // depth 8, grayscale, deflate, filter 0, no interlace
	chunk := append([]byte("IHDR"), ihdr...)
	out := append([]byte("\x89PNG\r\n\x1a\n"), binary.BigEndian.AppendUint32(nil, uint32(len(ihdr)))...)
	out = append(out, chunk...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(chunk))
}

// FuzzPrepareImage feeds untrusted bytes to the image preparation under each declared
// type: it never panics, and what it accepts is of a supported type, within the longest
// side, and kept byte for byte unless downscaled.
func FuzzPrepareImage(f *testing.F) {
	for _, seed := range [][]byte{pngHeader(3, 2), []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), []byte("\xff\xd8\xff\xe0"), []byte("RIFF\x00\x00\x00\x00WEBPVP8 "), {}} {
		f.Add(seed, uint8(0))
	}
	declared := []string{"image/png", "image/jpeg", "image/gif", "image/webp"}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		img, err := prepareImage("f", declared[int(which)%len(declared)], data, 64)
		if err != nil {
			return
		}
		if img.width <= 0 || img.height <= 0 || max(img.width, img.height) > 64 || sniffImage(img.data) != img.mediaType {
			t.Fatalf("accepted %dx%d %s", img.width, img.height, img.mediaType)
		}
		if img.original == nil && !bytes.Equal(img.data, data) {
			t.Fatal("an image within the cap was changed")
		}
	})
}
