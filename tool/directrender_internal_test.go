package tool

import (
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/content"
)

// TestPropDirectRenderCheck checks the direct default render's block check against the
// general one: for a block holding only a text, checkBlocks fails exactly when the text is
// not valid UTF-8, which is all the direct render checks.
func TestPropDirectRenderCheck(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var text string
		if rapid.Bool().Draw(t, "bytes") {
			text = string(rapid.SliceOf(rapid.Byte()).Draw(t, "raw"))
		} else {
			text = rapid.String().Draw(t, "text")
		}
		general := checkBlocks([]content.Block{content.Text(text)}) == nil
		if direct := utf8.ValidString(text); direct != general {
			t.Fatalf("text %q: direct check %v, checkBlocks %v", text, direct, general)
		}
	})
}
