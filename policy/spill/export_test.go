package spill

// TextSize and PlainText expose the size check and the join for the property that the
// first decides exactly as measuring the second would.
var (
	TextSize  = textSize
	PlainText = plainText
)
