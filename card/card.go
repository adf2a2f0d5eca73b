// Package card defines the UI render intents of tool calls (docs/behaviour.md §12): the pending card a
// tool presents for a call and the completed card it presents for a result. Cards are pure
// projections of a call's arguments and of its durable result, so a log replay renders the
// same cards as the live run did.
package card

import (
	"github.com/dsh-go/dsh/content"
)

// Kinds of call a generic card can declare.
const (
	KindRead    = "read"
	KindEdit    = "edit"
	KindDelete  = "delete"
	KindMove    = "move"
	KindSearch  = "search"
	KindExecute = "execute"
	KindFetch   = "fetch"
	KindOther   = "other"
)

// Card names.
const (
	Generic  = "generic"
	Terminal = "terminal"
	Diff     = "diff"
	Search   = "search"
	Read     = "read"
	Web      = "web"
)

// FileLocation points at a file and optionally a line in it.
type FileLocation struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// FileDiff is one file's change; OldText is nil for a created file.
type FileDiff struct {
	Path    string  `json:"path"`
	OldText *string `json:"oldText"`
	NewText string  `json:"newText"`
}

// Call is the pending card of a call. Card selects the variant:
//
//	generic   Title, Kind, RawInput, Content, Locations
//	terminal  Title (the command), Description, Cwd
//	diff      Title, Diffs, Locations
type Call struct {
	Card        string          `json:"card"`
	Title       string          `json:"title"`
	Kind        string          `json:"kind,omitempty"`
	RawInput    any             `json:"rawInput,omitempty"`
	Content     []content.Block `json:"content,omitempty"`
	Locations   []FileLocation  `json:"locations,omitempty"`
	Description string          `json:"description,omitempty"`
	Cwd         string          `json:"cwd,omitempty"`
	Diffs       []FileDiff      `json:"diffs,omitempty"`
}

// ReadLine is one numbered line of a read card.
type ReadLine struct {
	Number int    `json:"number"`
	Text   string `json:"text"`
}

// SearchMatch is one matching line of a search card.
type SearchMatch struct {
	LineNumber int    `json:"lineNumber"`
	Line       string `json:"line"`
}

// SearchFile groups the matches of one file.
type SearchFile struct {
	Path    string        `json:"path"`
	Matches []SearchMatch `json:"matches"`
}

// WebSource is one source of a web search card.
type WebSource struct {
	URL         string `json:"url"`
	Title       string `json:"title,omitempty"`
	Snippet     string `json:"snippet,omitempty"`
	PublishedAt string `json:"publishedAt,omitempty"`
}

// Result is the completed card of a call. Card selects the variant:
//
//	generic   Title, Content
//	terminal  Title, Output, ExitCode, Signal
//	diff      Title, Diffs
//	search    Shape "matches" (Files) or "paths" (Paths), Truncated, Total
//	read      Path, Offset, Lines, TotalLines, Lang, Content
//	web       WebKind "search" (Sources, Answer) or "fetch" (URL, StatusCode), Truncated
type Result struct {
	Card       string          `json:"card"`
	Title      string          `json:"title,omitempty"`
	Content    []content.Block `json:"content,omitempty"`
	Output     string          `json:"output,omitempty"`
	ExitCode   *int            `json:"exitCode,omitempty"`
	Signal     string          `json:"signal,omitempty"`
	Diffs      []FileDiff      `json:"diffs,omitempty"`
	Shape      string          `json:"shape,omitempty"`
	Files      []SearchFile    `json:"files,omitempty"`
	Paths      []string        `json:"paths,omitempty"`
	Truncated  bool            `json:"truncated,omitempty"`
	Total      int             `json:"total,omitempty"`
	Path       string          `json:"path,omitempty"`
	Offset     int             `json:"offset,omitempty"`
	Lines      []ReadLine      `json:"lines,omitempty"`
	TotalLines int             `json:"totalLines,omitempty"`
	Lang       string          `json:"lang,omitempty"`
	WebKind    string          `json:"kind,omitempty"`
	Sources    []WebSource     `json:"sources,omitempty"`
	Answer     string          `json:"answer,omitempty"`
	URL        string          `json:"url,omitempty"`
	StatusCode int             `json:"statusCode,omitempty"`
}

// ToolResult is the durable part of a result that a result card is computed from: what the
// session log keeps (docs/behaviour.md §3.1).
type ToolResult struct {
	Content []content.Block
	IsError bool
	Meta    any // the persisted presentation meta (a jsonv value), nil when absent
}
