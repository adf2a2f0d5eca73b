package session_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dsh-go/dsh/session"
)

// An image stored in a session's attachment store is referenced by its content address
// and read back, verified, by anyone holding the id — after a restart too.
func ExampleOpenAttachments() {
	dir, _ := os.MkdirTemp("", "attachments")
	defer os.RemoveAll(dir)
	store := session.OpenAttachments(filepath.Join(dir, session.AttachmentDirName))

	png := []byte("\x89PNG\r\n\x1a\n...pixels...")
	id, err := store.PutAttachment(session.MediaPNG, png)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(id == session.AttachmentID(png))

	reopened := session.OpenAttachments(filepath.Join(dir, session.AttachmentDirName))
	mediaType, data, err := reopened.ReadAttachment(id)
	fmt.Println(mediaType, len(data), err)

	_, err = store.PutAttachment(session.MediaJPEG, png)
	fmt.Println(err)
	// Output:
	// true
	// image/png 20 <nil>
	// attachment: the bytes are image/png, not the declared image/jpeg
}
