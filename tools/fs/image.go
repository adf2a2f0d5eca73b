package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"path/filepath"
	"strings"

	"golang.org/x/image/draw"
	"golang.org/x/image/webp"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/tool"
)

// Defaults of the read_image caps.
const (
	DefaultImageMaxBytes     = 20 << 20   // bytes of an image file read_image accepts
	DefaultImageMaxDimension = 2048       // pixels of the longest side the model receives
	DefaultImageMaxPixels    = 50_000_000 // decoded pixels of an image file read_image accepts
)

// ImageStore keeps the images read_image reads, content-addressed, and returns the id a
// content.ImageRef carries; a session's attachment store (session.Attachments) is one. It
// must be safe for concurrent use and return only once the image is durable.
type ImageStore interface {
	PutAttachment(mediaType string, data []byte) (id string, err error)
}

// imageTypes maps the extensions read_image accepts to the media type they declare.
var imageTypes = map[string]string{
	".png":  "image/png",
	".jpg":  "image/jpeg",
	".jpeg": "image/jpeg",
	".gif":  "image/gif",
	".webp": "image/webp",
}

// readImageArgs are the arguments of read_image.
type readImageArgs struct {
	FilePath string `json:"file_path" jsonschema:"The image file: a path relative to the workspace root, or an absolute path inside it."`
}

// ImageOutput is the canonical value of read_image: the path read and the stored image.
type ImageOutput struct {
	Path  string    `json:"path"`
	Image ImageInfo `json:"image"`
}

// ImageInfo describes the image the model receives: its attachment, media type, size in
// bytes and pixels, the file name, and the file's own dimensions when it was downscaled.
type ImageInfo struct {
	AttachmentID       string      `json:"attachmentId"`
	MediaType          string      `json:"mediaType"`
	Bytes              int         `json:"bytes"`
	Width              int         `json:"width"`
	Height             int         `json:"height"`
	Name               string      `json:"name,omitempty"`
	OriginalDimensions *Dimensions `json:"originalDimensions,omitempty"`
}

// Dimensions are an image's width and height in pixels.
type Dimensions struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

func (t *Tools) newReadImage() (*tool.Definition, error) {
	return tool.New("read_image",
		"Read a PNG/JPEG/WebP/GIF file in the workspace and return the image itself, for you to look at. "+
			"Large images are downscaled before you receive them, so use this tool directly instead of installing image libraries or making thumbnails. "+
			"Independent files may be read concurrently.",
		t.readImageBody,
		tool.Render(renderImage),
		tool.ConcurrencySafe(),
		tool.CallCard(func(in readImageArgs) *card.Call {
			return &card.Call{Card: card.Generic, Title: "Read image " + in.FilePath, Kind: card.KindRead,
				Locations: []card.FileLocation{{Path: in.FilePath}}}
		}),
	)
}

func (t *Tools) readImageBody(ctx context.Context, _ *tool.Call, in readImageArgs) (ImageOutput, error) {
	if blank(in.FilePath) {
		return ImageOutput{}, errBlankPath
	}
	declared, ok := imageTypes[strings.ToLower(filepath.Ext(in.FilePath))]
	if !ok {
		return ImageOutput{}, fmt.Errorf("cannot read %q: read_image only accepts PNG/JPEG/WebP/GIF paths", in.FilePath)
	}
	if t.cfg.ImageRefusal != "" {
		return ImageOutput{}, fmt.Errorf("cannot read %q as an image: %s", in.FilePath, t.cfg.ImageRefusal)
	}
	target, err := t.resolve("read", in.FilePath)
	if err != nil {
		return ImageOutput{}, err
	}
	data, err := t.readImageFile(target)
	if err != nil {
		return ImageOutput{}, err
	}
	if ctx.Err() != nil {
		return ImageOutput{}, fsError(CodeAborted, "read_image aborted")
	}
	img, err := prepareImage(target.Path, declared, data, t.cfg.ImageMaxDimension)
	if err != nil {
		return ImageOutput{}, err
	}
	if ctx.Err() != nil {
		return ImageOutput{}, fsError(CodeAborted, "read_image aborted")
	}
	id, err := t.cfg.Images.PutAttachment(img.mediaType, img.data)
	if err != nil {
		return ImageOutput{}, fmt.Errorf("cannot read %q as an image: storing it failed: %w", target.Path, err)
	}
	info := ImageInfo{AttachmentID: id, MediaType: img.mediaType, Bytes: len(img.data), Width: img.width, Height: img.height,
		Name: filepath.Base(target.Path), OriginalDimensions: img.original}
	return ImageOutput{Path: target.Path, Image: info}, nil
}

// readImageFile reads target, a regular file of at most ImageMaxBytes.
func (t *Tools) readImageFile(target Target) ([]byte, error) {
	f, fi, err := t.openFile("read", target)
	if errors.Is(err, errAbsent) {
		return nil, fsError(CodeNotFound, "cannot read %q: not found", target.Path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return nil, fsError(CodeNotRegularFile, "cannot read %q: not a regular file", target.Path)
	}
	limit := t.cfg.ImageMaxBytes
	tooLarge := func(n int64) error {
		return fsError(CodeTooLarge, "cannot read %q: the file is %d bytes, more than the %d-byte limit for images; downscale the image and read the smaller copy", target.Path, n, limit)
	}
	if fi.Size() > limit {
		return nil, tooLarge(fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, ioError("read", target.Path, err)
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(int64(len(data)))
	}
	return data, nil
}

// preparedImage is what the model receives of an image file.
type preparedImage struct {
	mediaType     string
	data          []byte
	width, height int
	original      *Dimensions // the file's dimensions when downscaled
}

// prepareImage checks that data is an image of the declared type that decodes, and
// downscales it when its longest side passes maxSide (re-encoded as JPEG for a JPEG, else
// as PNG, since the standard library has no WebP or animated GIF encoder). An image that
// fits is kept byte for byte.
func prepareImage(path, declared string, data []byte, maxSide int) (preparedImage, error) {
	actual := sniffImage(data)
	if actual == "" {
		return preparedImage{}, fsError(CodeNotText, "cannot read %q: the file is not a PNG/JPEG/WebP/GIF image", path)
	}
	if actual != declared {
		return preparedImage{}, fmt.Errorf("cannot read %q: the %s extension declares %s, but the bytes are %s; rename the file to match its actual format",
			path, strings.ToLower(filepath.Ext(path)), declared, actual)
	}
	decode := map[string]func(io.Reader) (image.Image, error){
		"image/png": png.Decode, "image/jpeg": jpeg.Decode, "image/gif": gif.Decode, "image/webp": webp.Decode,
	}[actual]
	decodeConfig := map[string]func(io.Reader) (image.Config, error){
		"image/png": png.DecodeConfig, "image/jpeg": jpeg.DecodeConfig, "image/gif": gif.DecodeConfig, "image/webp": webp.DecodeConfig,
	}[actual]
	cfg, err := decodeConfig(bytes.NewReader(data))
	if err != nil {
		return preparedImage{}, fmt.Errorf("cannot read %q: the %s image does not decode: %v", path, actual, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return preparedImage{}, fmt.Errorf("cannot read %q: the image has no pixels (%dx%d)", path, cfg.Width, cfg.Height)
	}
	if int64(cfg.Width)*int64(cfg.Height) > DefaultImageMaxPixels {
		return preparedImage{}, fsError(CodeTooLarge, "cannot read %q: the image (%dx%d) exceeds the %d-pixel decoded-size limit; downscale the image and read the smaller copy",
			path, cfg.Width, cfg.Height, DefaultImageMaxPixels)
	}
	src, err := decode(bytes.NewReader(data))
	if err != nil {
		return preparedImage{}, fmt.Errorf("cannot read %q: the %s image does not decode: %v", path, actual, err)
	}
	w, h := src.Bounds().Dx(), src.Bounds().Dy()
	if max(w, h) <= maxSide {
		return preparedImage{mediaType: actual, data: data, width: w, height: h}, nil
	}
	nw, nh := maxSide, max(1, int(int64(h)*int64(maxSide)/int64(w)))
	if h > w {
		nw, nh = max(1, int(int64(w)*int64(maxSide)/int64(h))), maxSide
	}
	dst := image.NewRGBA(image.Rect(0, 0, nw, nh))
	draw.BiLinear.Scale(dst, dst.Bounds(), src, src.Bounds(), draw.Src, nil)
	var buf bytes.Buffer
	mediaType := "image/png"
	if actual == "image/jpeg" {
		mediaType = "image/jpeg"
		err = jpeg.Encode(&buf, dst, &jpeg.Options{Quality: 90})
	} else {
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, dst)
	}
	if err != nil {
		return preparedImage{}, fmt.Errorf("cannot read %q: encoding the downscaled image failed: %v", path, err)
	}
	return preparedImage{mediaType: mediaType, data: buf.Bytes(), width: nw, height: nh, original: &Dimensions{Width: w, Height: h}}, nil
}

// sniffImage returns the media type of data from its magic bytes, or "".
func sniffImage(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return "image/gif"
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

// renderImage is what the model reads: an envelope describing the image, then the image.
// A downscaled image names the file's dimensions and how to map coordinates back to them.
func renderImage(_ readImageArgs, out ImageOutput) ([]content.Block, error) {
	img := out.Image
	scaled := ""
	if o := img.OriginalDimensions; o != nil {
		x := fmt.Sprintf("%.2f", float64(o.Width)/float64(img.Width))
		y := fmt.Sprintf("%.2f", float64(o.Height)/float64(img.Height))
		advice := "multiply coordinates by " + x
		if x != y {
			advice = "multiply x coordinates by " + x + " and y coordinates by " + y
		}
		scaled = fmt.Sprintf(" (downscaled from %dx%d px; %s to locate features in the original file)", o.Width, o.Height, advice)
	}
	text := fmt.Sprintf("<path>%s</path>\n<type>image</type>\n<content>\n%s image, %dx%d px, %d bytes%s\n</content>",
		out.Path, img.MediaType, img.Width, img.Height, img.Bytes, scaled)
	return []content.Block{content.Text(text), {Type: content.TypeImage, Image: &content.ImageRef{
		AttachmentID: img.AttachmentID, MediaType: img.MediaType, Bytes: int64(img.Bytes),
		Width: img.Width, Height: img.Height, Name: img.Name,
	}}}, nil
}
