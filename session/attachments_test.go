package session

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Minimal real image headers: enough for the magic-byte checks the store does.
var (
	pngBytes  = []byte("\x89PNG\r\n\x1a\nrest of a png")
	jpegBytes = []byte("\xff\xd8\xff\xe0rest of a jpeg")
	gifBytes  = []byte("GIF89arest of a gif")
	webpBytes = []byte("RIFF\x10\x00\x00\x00WEBPVP8L rest")
)

func stores(t *testing.T) map[string]Attachments {
	return map[string]Attachments{
		"dir":    OpenAttachments(filepath.Join(t.TempDir(), "s", AttachmentDirName)),
		"memory": NewMemoryAttachments(),
	}
}

func TestAttachmentsRoundTrip(t *testing.T) {
	for name, store := range stores(t) {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				mediaType string
				data      []byte
			}{{MediaPNG, pngBytes}, {MediaJPEG, jpegBytes}, {MediaGIF, gifBytes}, {MediaWebP, webpBytes}} {
				id, err := store.PutAttachment(tc.mediaType, tc.data)
				if err != nil {
					t.Fatalf("put %s: %v", tc.mediaType, err)
				}
				if id != AttachmentID(tc.data) || !strings.HasPrefix(id, "sha256:") || len(id) != 71 {
					t.Fatalf("id = %q", id)
				}
				again, err := store.PutAttachment(tc.mediaType, tc.data)
				if err != nil || again != id {
					t.Fatalf("second put = %q, %v", again, err)
				}
				mediaType, data, err := store.ReadAttachment(id)
				if err != nil || mediaType != tc.mediaType || !bytes.Equal(data, tc.data) {
					t.Fatalf("read = %q, %q, %v", mediaType, data, err)
				}
			}
		})
	}
}

func TestAttachmentsErrors(t *testing.T) {
	for name, store := range stores(t) {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				mediaType string
				data      []byte
				want      string
			}{
				{"image/bmp", []byte("BM"), `attachment: unsupported media type "image/bmp"`},
				{MediaPNG, jpegBytes, "attachment: the bytes are image/jpeg, not the declared image/png"},
				{MediaPNG, []byte("text"), "attachment: the bytes are not an image of type image/png"},
				{MediaPNG, append(bytes.Clone(pngBytes), make([]byte, MaxAttachmentBytes)...), "is more than the 67108864-byte limit"},
			} {
				if _, err := store.PutAttachment(tc.mediaType, tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("put %s: %v, want %q", tc.mediaType, err, tc.want)
				}
			}
			for _, id := range []string{"", "abc", "sha256:xyz", "sha256:" + strings.Repeat("A", 64), "md5:" + strings.Repeat("0", 64)} {
				if _, _, err := store.ReadAttachment(id); err == nil || !strings.Contains(err.Error(), "malformed id") {
					t.Errorf("read %q: %v", id, err)
				}
			}
			missing := AttachmentID([]byte("never stored"))
			if _, _, err := store.ReadAttachment(missing); !errors.Is(err, ErrAttachmentNotFound) {
				t.Errorf("read missing: %v", err)
			}
		})
	}
}

// TestDirAttachmentsSurviveReopenAndDetectDamage: the files outlive the store value, and
// bytes changed on disk are reported, not returned.
func TestDirAttachmentsSurviveReopenAndDetectDamage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), AttachmentDirName)
	id, err := OpenAttachments(dir).PutAttachment(MediaPNG, pngBytes)
	if err != nil {
		t.Fatal(err)
	}
	reopened := OpenAttachments(dir)
	if _, data, err := reopened.ReadAttachment(id); err != nil || !bytes.Equal(data, pngBytes) {
		t.Fatalf("after reopen: %q, %v", data, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != id[len("sha256:"):] {
		t.Fatalf("directory holds %v, want only the attachment (no temporary files)", entries)
	}
	path := filepath.Join(dir, id[len("sha256:"):])
	if err := os.WriteFile(path, append(bytes.Clone(pngBytes), 'x'), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := reopened.ReadAttachment(id); err == nil || !strings.Contains(err.Error(), "is damaged") {
		t.Fatalf("damaged read: %v", err)
	}
	// A directory that cannot be created is an error naming the attachment store.
	blocked := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocked, nil, 0o600)
	if _, err := OpenAttachments(filepath.Join(blocked, "attachments")).PutAttachment(MediaPNG, pngBytes); err == nil || !strings.HasPrefix(err.Error(), "attachment: ") {
		t.Fatalf("put under a file: %v", err)
	}
}

func TestAttachmentsConcurrentPuts(t *testing.T) {
	for name, store := range stores(t) {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make([]error, 32)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					data := append(bytes.Clone(pngBytes), byte(i%4))
					id, err := store.PutAttachment(MediaPNG, data)
					if err == nil {
						var got []byte
						if _, got, err = store.ReadAttachment(id); err == nil && !bytes.Equal(got, data) {
							err = errors.New("read back different bytes")
						}
					}
					errs[i] = err
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestFileLogAttachmentsLiveBesideTheLog(t *testing.T) {
	st, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	log, err := st.Create(t.Context(), Header{ID: "s1", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if got, want := log.Attachments().(*DirAttachments).Dir(), filepath.Join(filepath.Dir(log.Path()), AttachmentDirName); got != want {
		t.Fatalf("dir = %s, want %s", got, want)
	}
}

// FuzzAttachmentID: an id from an untrusted log never panics the store; an accepted id is
// exactly "sha256:" and 64 lower-case hex digits.
func FuzzAttachmentID(f *testing.F) {
	for _, s := range []string{"", "sha256:", AttachmentID(pngBytes), "sha256:" + strings.Repeat("A", 64), "sha256:../../etc/passwd", "sha256:" + strings.Repeat("0", 63) + "/"} {
		f.Add(s)
	}
	dir := OpenAttachments(f.TempDir())
	mem := NewMemoryAttachments()
	f.Fuzz(func(t *testing.T, id string) {
		digest, err := parseAttachmentID(id)
		if err == nil && (id != "sha256:"+digest || len(digest) != 64 || strings.Trim(digest, "0123456789abcdef") != "") {
			t.Fatalf("accepted %q", id)
		}
		for _, s := range []Attachments{dir, mem} {
			if _, _, rerr := s.ReadAttachment(id); rerr == nil || (err == nil) != errors.Is(rerr, ErrAttachmentNotFound) {
				t.Fatalf("read %q: %v (parse: %v)", id, rerr, err)
			}
		}
	})
}
