package spill_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/policy/spill"
)

// TestPropertyTextSize: the size check the policy decides from says exactly what joining
// the texts and measuring them would: whether the blocks are all text, and how long the
// text is.
func TestPropertyTextSize(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 5).Draw(t, "blocks")
		blocks := make([]content.Block, n)
		for i := range blocks {
			blocks[i] = content.Block{
				Type: rapid.SampledFrom([]string{content.TypeText, content.TypeText, content.TypeText, "image", content.TypeToolResult}).Draw(t, "type"),
				Text: rapid.String().Draw(t, "text"),
			}
		}
		size, sizeOK := spill.TextSize(blocks)
		text, textOK := spill.PlainText(blocks)
		if sizeOK != textOK {
			t.Fatalf("TextSize ok = %v, PlainText ok = %v", sizeOK, textOK)
		}
		if sizeOK && size != len(text) {
			t.Fatalf("TextSize = %d, joined text is %d bytes", size, len(text))
		}
	})
}
