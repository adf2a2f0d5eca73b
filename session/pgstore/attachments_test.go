package pgstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/session"
)

// png is the smallest PNG header the sniffer accepts, with a body.
var png = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR-body")

func TestAttachments(t *testing.T) {
	c := newClock()
	st := pgStore(t, c.Now)
	w, err := st.Create(t.Context(), session.Header{ID: "img", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	a := w.Attachments()
	id, err := a.PutAttachment(session.MediaPNG, png)
	if err != nil {
		t.Fatal(err)
	}
	if id != session.AttachmentID(png) {
		t.Errorf("id %s, want the content address %s", id, session.AttachmentID(png))
	}
	if again, err := a.PutAttachment(session.MediaPNG, png); err != nil || again != id {
		t.Errorf("storing the same bytes again = %s, %v", again, err)
	}
	mt, data, err := a.ReadAttachment(id)
	if err != nil || mt != session.MediaPNG || string(data) != string(png) {
		t.Fatalf("ReadAttachment = %q, %d bytes, %v", mt, len(data), err)
	}
	if _, err := a.PutAttachment(session.MediaJPEG, png); err == nil || !strings.Contains(err.Error(), "not a image/jpeg image") {
		t.Errorf("a PNG declared as JPEG = %v", err)
	}
	if _, _, err := a.ReadAttachment("sha256:00"); !errors.Is(err, session.ErrAttachmentNotFound) {
		t.Errorf("a missing attachment = %v, want ErrAttachmentNotFound", err)
	}
	if _, err := w.AppendDurable(session.TurnStart{Turn: 1}.Event()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Remove(t.Context(), "img"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.ReadAttachment(id); !errors.Is(err, session.ErrAttachmentNotFound) {
		t.Errorf("an attachment of a removed session = %v, want ErrAttachmentNotFound", err)
	}
}
