package fs

import (
	"context"
	"errors"
	iofs "io/fs"
	"strings"
	"unicode/utf8"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// writeArgs are the arguments of write.
type writeArgs struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

// WriteOutput is the canonical value of a write. Before is the old content (line endings
// normalized to LF) or nil for a creation and when no diff basis was taken (a binary or
// non-UTF-8 old file, or a side of at least DiffBasisMaxBytes); After is the new content with
// LF line endings.
type WriteOutput struct {
	Path      string  `json:"path"`
	Operation string  `json:"operation"` // "create" or "update"
	Before    *string `json:"before"`
	After     string  `json:"after"`
}

const writeOutputSchema = `{"type":"object","additionalProperties":false,"properties":{
	"path":{"type":"string"},
	"operation":{"type":"string","enum":["create","update"]},
	"before":{"oneOf":[{"type":"string"},{"type":"null"}]},
	"after":{"type":"string"}},
	"required":["path","operation","before","after"]}`

const writeInputSchema = `{"type":"object","properties":{
	"file_path":{"type":"string","description":"The file to write: a path relative to the workspace root, or an absolute path inside it. Missing directories are created."},
	"content":{"type":"string","description":"The complete new content of the file."}},
	"required":["file_path","content"]}`

func (t *Tools) newWrite() (*tool.Definition, error) {
	def, err := tool.New("write",
		"Create a UTF-8 text file in the workspace, or replace its entire content.",
		t.writeBody,
		tool.InputSchema(mustSchema(writeInputSchema)),
		tool.OutputSchema(mustSchema(writeOutputSchema)),
		tool.CallCard(writeCallCard),
		tool.ResultCard(writeResultCard),
	)
	if err != nil {
		return nil, err
	}
	// The value holds whole files: render and meta read the validated value in place
	// instead of decoding it into WriteOutput (which would copy both files twice more).
	def.Output.Render = func(_, value any) ([]content.Block, error) {
		verb := "Updated"
		if member0[string](value, "operation") == "create" {
			verb = "Created"
		}
		return content.Texts("<path>" + member0[string](value, "path") + "</path>\n<type>file</type>\n<content>\n" + verb + " file\n</content>"), nil
	}
	def.Output.PresentationMeta = func(args, value any) (any, error) {
		diffs := []any{}
		if before, ok := member0[any](value, "before").(string); ok {
			diffs = diffsValue(hunkDiffs(member0[string](args, "file_path"), before, member0[string](value, "after")))
		}
		return jsonv.NewObject(jsonv.Member{Name: "diffs", Value: diffs}), nil
	}
	return def, nil
}

func (t *Tools) writeBody(ctx context.Context, call *tool.Call, in writeArgs) (WriteOutput, error) {
	if blank(in.FilePath) {
		return WriteOutput{}, errBlankPath
	}
	target, err := t.resolve("write", in.FilePath)
	if err != nil {
		return WriteOutput{}, err
	}
	out, err := t.writeFile(ctx, call, target, in.Content)
	if err != nil {
		return WriteOutput{}, remediate(err)
	}
	return out, nil
}

// writeFile performs one write and records it as an observation. Without the observation
// policy it is an unconditional create-or-replace; with it, a file observed present must
// still be at the observed version and any other file must not exist yet.
func (t *Tools) writeFile(ctx context.Context, call *tool.Call, target Target, text string) (WriteOutput, error) {
	unlock := t.locks.lock(target.Rel)
	defer unlock()
	// The guard is read under the lock, so a write or edit that just finished (perhaps by
	// the same agent) is not mistaken for a foreign change.
	var guard observation
	guarded := t.obs != nil
	if guarded {
		guard, _ = t.obs.get(call.Agent(), target.Rel)
	}

	display := target.Path
	f, fi, err := t.openFile("write", target)
	exists := err == nil
	if err != nil && !errors.Is(err, errAbsent) {
		return WriteOutput{}, err
	}
	if exists {
		defer f.Close()
		if !fi.Mode().IsRegular() {
			return WriteOutput{}, fsError(CodeNotRegularFile, "cannot write %q: not a regular file", display)
		}
		if _, _, nlink, _ := identityOf(fi); nlink > 1 {
			return WriteOutput{}, hardLinkDenied("write", display, nlink, t.ws.dir)
		}
	}
	switch {
	case guarded && guard.present && !exists:
		return WriteOutput{}, fsError(CodeStaleVersion, "cannot write %q: file no longer exists", display)
	case guarded && guard.present && !statVersion(fi).sameMeta(guard.v):
		return WriteOutput{}, fsError(CodeStaleVersion, "cannot write %q: file changed since it was read", display)
	case guarded && !guard.present && exists:
		return WriteOutput{}, fsError(CodeNotObserved, "cannot overwrite existing %q without reading it first", display)
	}

	var before *string
	diffable := int64(len(text)) < t.cfg.DiffBasisMaxBytes
	if exists && (guarded || diffable) {
		keep := int64(-1)
		if diffable {
			keep = t.cfg.DiffBasisMaxBytes - 1
		}
		data, sum, _, err := t.readAll(ctx, "write", display, f, fi.Size(), keep, true)
		if err != nil {
			return WriteOutput{}, err
		}
		if guarded && sum != guard.v.sum {
			return WriteOutput{}, fsError(CodeStaleVersion, "cannot write %q: file changed since it was read", display)
		}
		if data != nil && utf8.Valid(data) {
			s := normalizeEOL(string(trimBOM(data)))
			before = &s
		}
	}

	var perm iofs.FileMode
	if exists {
		perm = fi.Mode().Perm()
	}
	newFI, err := t.writeAtomic(ctx, "write", display, target.Rel, []byte(text), perm, exists, guarded && !exists)
	if err != nil {
		return WriteOutput{}, err
	}
	op := "create"
	if exists {
		op = "update"
	}
	// Observed under the lock, so the next guarded mutation sees this write.
	t.observe(call, target, observation{present: true, v: t.versionAfter(newFI, []byte(text))})
	return WriteOutput{Path: display, Operation: op, Before: before, After: normalizeEOL(text)}, nil
}

// versionAfter is the version of a file this package just wrote with data; the zero version
// (which matches nothing) when the file vanished at once.
func (t *Tools) versionAfter(fi iofs.FileInfo, data []byte) version {
	if fi == nil {
		return version{}
	}
	v := statVersion(fi)
	v.sum = t.sumOf(data)
	return v
}

// normalizeEOL turns every CRLF into LF; lone CRs stay.
func normalizeEOL(s string) string {
	if !strings.Contains(s, "\r\n") {
		return s
	}
	return strings.ReplaceAll(s, "\r\n", "\n")
}

// trimBOM drops a leading UTF-8 byte-order mark.
func trimBOM(b []byte) []byte {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		return b[3:]
	}
	return b
}
