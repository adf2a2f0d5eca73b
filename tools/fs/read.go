package fs

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/dsh-go/dsh/card"
	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/tool"
)

// readArgs are the arguments of read. offset and limit are numbers, not integers, in the
// schema: the body checks them with the exact messages of docs/behaviour.md §14.
type readArgs struct {
	FilePath string   `json:"file_path"`
	Offset   *float64 `json:"offset,omitempty"`
	Limit    *float64 `json:"limit,omitempty"`
}

// ReadOutput is the canonical value of a read: the window of lines starting at Offset and
// the exact line count of the file. Path is the requested path made absolute.
type ReadOutput struct {
	Path       string `json:"path"`
	Offset     int    `json:"offset"`
	Lines      []Line `json:"lines"`
	TotalLines int    `json:"totalLines"`
}

// ReadMeta is the presentation meta of a read (docs/behaviour.md §12): the window and a language hint,
// persisted so that the read card renders from the log alone.
type ReadMeta struct {
	Path       string `json:"path"`
	Offset     int    `json:"offset"`
	Lines      []Line `json:"lines"`
	TotalLines int    `json:"totalLines"`
	Lang       string `json:"lang,omitempty"`
}

const readOutputSchema = `{"type":"object","additionalProperties":false,"properties":{
	"path":{"type":"string"},
	"offset":{"type":"integer"},
	"lines":{"type":"array","items":{"type":"object","additionalProperties":false,
		"properties":{"number":{"type":"integer"},"text":{"type":"string"}},"required":["number","text"]}},
	"totalLines":{"type":"integer"}},
	"required":["path","offset","lines","totalLines"]}`

func (t *Tools) readInputSchema() any {
	where := "The file to read: a path relative to the workspace root, or an absolute path inside it."
	if len(t.ro) > 0 {
		where = "The file to read: a path relative to the workspace root, or an absolute path inside it or in a read-only directory, such as a saved full output a tool result named."
	}
	return mustSchema(fmt.Sprintf(`{"type":"object","properties":{
	"file_path":{"type":"string","description":%q},
	"offset":{"type":"number","description":"The 1-based number of the first line to return. Defaults to 1."},
	"limit":{"type":"number","description":"The most lines to return. Defaults to %d, which is also the largest value accepted."}},
	"required":["file_path"]}`, where, t.cfg.ReadLimit))
}

func (t *Tools) newRead() (*tool.Definition, error) {
	desc := "Read a UTF-8 text file in the workspace and return its lines, numbered, one window at a time."
	if len(t.ro) > 0 {
		desc = "Read a UTF-8 text file in the workspace, or a full output a tool saved outside it, and return its lines, numbered, one window at a time."
	}
	return tool.New("read", desc,
		t.readBody,
		tool.InputSchema(t.readInputSchema()),
		tool.OutputSchema(mustSchema(readOutputSchema)),
		tool.Render(t.renderRead),
		tool.Meta(func(_ readArgs, out ReadOutput) (any, error) {
			return ReadMeta{Path: out.Path, Offset: out.Offset, Lines: out.Lines, TotalLines: out.TotalLines, Lang: LangFromPath(out.Path)}, nil
		}),
		tool.ConcurrencySafe(),
		tool.CallCard(readCallCard),
		tool.ResultCard(readResultCard),
	)
}

// readSpec validates the arguments the schema cannot and applies the defaults.
func (t *Tools) readSpec(in readArgs) (windowSpec, error) {
	if blank(in.FilePath) {
		return windowSpec{}, errBlankPath
	}
	offset, limit := 1, t.cfg.ReadLimit
	if in.Offset != nil {
		n, err := positiveInteger(*in.Offset, "offset")
		if err != nil {
			return windowSpec{}, err
		}
		offset = n
	}
	if in.Limit != nil {
		n, err := positiveInteger(*in.Limit, "limit")
		if err != nil {
			return windowSpec{}, err
		}
		if n > t.cfg.ReadLimit {
			return windowSpec{}, fmt.Errorf("limit must be less than or equal to %d", t.cfg.ReadLimit)
		}
		limit = n
	}
	return windowSpec{offset: offset, limit: limit, maxLineLength: t.cfg.ReadMaxLineLength, maxBytes: t.cfg.ReadMaxBytes}, nil
}

// positiveInteger checks that f is an integer of at least 1. Integers too large for an int
// are clamped: they lie past the end of every file anyway.
func positiveInteger(f float64, name string) (int, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || f < 1 {
		return 0, fmt.Errorf("%s must be a positive integer", name)
	}
	if f >= math.MaxInt32 {
		return math.MaxInt32, nil
	}
	return int(f), nil
}

func (t *Tools) readBody(ctx context.Context, call *tool.Call, in readArgs) (ReadOutput, error) {
	spec, err := t.readSpec(in)
	if err != nil {
		return ReadOutput{}, err
	}
	target, err := t.resolve("read", in.FilePath)
	if err != nil {
		return ReadOutput{}, err
	}
	w, v, err := t.readWindow(ctx, target, spec)
	if errors.Is(err, errAbsent) {
		t.observe(call, target, observation{present: false})
		return ReadOutput{}, fsError(CodeNotFound, "cannot read %q: not found", target.Path)
	}
	if errors.Is(err, errOffset) {
		// The message shows the offset as given, even beyond the clamped range.
		offset := float64(spec.offset)
		if in.Offset != nil {
			offset = *in.Offset
		}
		return ReadOutput{}, fsError(CodeNotFound, "offset %s is out of range for %q (%d lines)", jsNumber(offset), target.Path, w.total)
	}
	if err != nil {
		return ReadOutput{}, err
	}
	t.observe(call, target, observation{present: true, v: v})
	return ReadOutput{Path: target.Path, Offset: spec.offset, Lines: w.lines, TotalLines: w.total}, nil
}

// readWindow opens target, checks that it is a regular file and runs its bytes through a
// window builder, hashing them for the version. Files of at least ReadStreamMinSize bytes
// are read in fixed chunks; smaller ones in one piece.
func (t *Tools) readWindow(ctx context.Context, target Target, spec windowSpec) (*windowBuilder, version, error) {
	f, fi, err := t.openFile("read", target)
	if err != nil {
		return nil, version{}, err
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return nil, version{}, fsError(CodeNotRegularFile, "cannot read %q: not a regular file", target.Path)
	}
	v := statVersion(fi)
	size := chunkSize
	if fi.Size() < t.cfg.ReadStreamMinSize {
		// One read, plus a byte to see the end; at least a page, for files whose reported
		// size understates their content.
		size = max(int(fi.Size())+1, 4096)
	}
	buf := make([]byte, size)
	var h maphash.Hash
	h.SetSeed(t.seed)
	b := newWindowBuilder(spec)
	for {
		if ctx.Err() != nil {
			return nil, version{}, fsError(CodeAborted, "read aborted")
		}
		n, rerr := f.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			if err := b.Write(buf[:n]); err != nil {
				return nil, version{}, fsError(CodeNotText, "cannot read %q: %s", target.Path, err)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, version{}, ioError("read", target.Path, rerr)
		}
	}
	switch err := b.finish(); {
	case errors.Is(err, errOffset):
		return b, version{}, errOffset
	case err != nil:
		return nil, version{}, fsError(CodeNotText, "cannot read %q: %s", target.Path, err)
	}
	v.sum = h.Sum64()
	return b, v, nil
}

// renderRead renders the read envelope.
func (t *Tools) renderRead(in readArgs, out ReadOutput) ([]content.Block, error) {
	spec, err := t.readSpec(in)
	if err != nil {
		return nil, err
	}
	return content.Texts(formatRead(out, spec.limit)), nil
}

// formatRead returns the read envelope: the numbered lines and a footer saying whether the
// byte cap cut the window, more lines follow, or the file ended.
func formatRead(out ReadOutput, limit int) string {
	end := max(0, out.Offset-1)
	if n := len(out.Lines); n > 0 {
		end = out.Lines[n-1].Number
	}
	var footer string
	switch {
	case len(out.Lines) < limit && end < out.TotalLines:
		footer = fmt.Sprintf("(Output capped. Showing lines %d-%d. Use offset=%d to continue.)", out.Offset, end, end+1)
	case end < out.TotalLines:
		footer = fmt.Sprintf("(Showing lines %d-%d of %d. Use offset=%d to continue.)", out.Offset, end, out.TotalLines, end+1)
	default:
		footer = fmt.Sprintf("(End of file - total %d lines)", out.TotalLines)
	}
	var sb strings.Builder
	sb.WriteString("<path>")
	sb.WriteString(out.Path)
	sb.WriteString("</path>\n<type>file</type>\n<content>\n")
	for _, l := range out.Lines {
		sb.WriteString(strconv.Itoa(l.Number))
		sb.WriteString(": ")
		sb.WriteString(l.Text)
		sb.WriteByte('\n')
	}
	if len(out.Lines) > 0 {
		sb.WriteByte('\n')
	}
	sb.WriteString(footer)
	sb.WriteString("\n</content>")
	return sb.String()
}

// readCallCard is the pending card of a read: "Read <path>" with the requested window.
func readCallCard(in readArgs) *card.Call {
	offset := 1.0
	if in.Offset != nil {
		offset = *in.Offset
	}
	title := "Read " + in.FilePath
	switch {
	case in.Limit != nil && *in.Limit > 0:
		title += " (" + jsNumber(offset) + " - " + jsNumber(offset+*in.Limit-1) + ")"
	case in.Offset != nil:
		title += " (from line " + jsNumber(*in.Offset) + ")"
	}
	line := 0 // a line that is not a positive integer is left out
	if offset == math.Trunc(offset) && offset >= 1 && offset < math.MaxInt32 {
		line = int(offset)
	}
	return &card.Call{
		Card:      card.Generic,
		Title:     title,
		Kind:      card.KindRead,
		Locations: []card.FileLocation{{Path: in.FilePath, Line: line}},
	}
}
