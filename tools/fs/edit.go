package fs

import (
	"context"
	"errors"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dsh-go/dsh/content"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// editArgs are the arguments of edit.
type editArgs struct {
	FilePath   string `json:"file_path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll *bool  `json:"replace_all,omitempty"`
}

// EditOutput is the canonical value of an edit: the file's content before and after, with
// line endings normalized to LF.
type EditOutput struct {
	Path   string `json:"path"`
	Before string `json:"before"`
	After  string `json:"after"`
}

const editOutputSchema = `{"type":"object","additionalProperties":false,"properties":{
	"path":{"type":"string"},
	"before":{"type":"string"},
	"after":{"type":"string"}},
	"required":["path","before","after"]}`

const editInputSchema = `{"type":"object","properties":{
	"file_path":{"type":"string","description":"The file to edit: a path relative to the workspace root, or an absolute path inside it."},
	"old_string":{"type":"string","description":"The exact text to replace. It must occur exactly once unless replace_all is true."},
	"new_string":{"type":"string","description":"The text to put in its place; an empty string deletes old_string."},
	"replace_all":{"type":"boolean","description":"Replace every occurrence of old_string instead of requiring exactly one. Defaults to false."}},
	"required":["file_path","old_string","new_string"]}`

// editMaxBytes bounds the files edit loads: larger ones fail FS_TOO_LARGE instead of
// exhausting memory.
const editMaxBytes = 256 << 20

func (t *Tools) newEdit() (*tool.Definition, error) {
	def, err := tool.New("edit",
		"Edit an existing UTF-8 text file in the workspace by replacing literal text.",
		t.editBody,
		tool.InputSchema(mustSchema(editInputSchema)),
		tool.OutputSchema(mustSchema(editOutputSchema)),
		tool.CallCard(editCallCard),
		tool.ResultCard(editResultCard),
	)
	if err != nil {
		return nil, err
	}
	// The value holds the whole file twice: render and meta read the validated value in
	// place instead of decoding it into EditOutput.
	def.Output.Render = func(args, value any) ([]content.Block, error) {
		p := member0[string](value, "path")
		if all, _ := member0[any](args, "replace_all").(bool); all {
			return content.Texts("The file " + p + " has been updated. All occurrences were successfully replaced."), nil
		}
		return content.Texts("The file " + p + " has been updated successfully."), nil
	}
	def.Output.PresentationMeta = func(args, value any) (any, error) {
		diffs := diffsValue(hunkDiffs(member0[string](args, "file_path"), member0[string](value, "before"), member0[string](value, "after")))
		return jsonv.NewObject(jsonv.Member{Name: "diffs", Value: diffs}), nil
	}
	return def, nil
}

func (t *Tools) editBody(ctx context.Context, call *tool.Call, in editArgs) (EditOutput, error) {
	switch {
	case blank(in.FilePath):
		return EditOutput{}, errBlankPath
	case in.OldString == "":
		return EditOutput{}, errors.New("old_string must be a non-empty string")
	case in.OldString == in.NewString:
		return EditOutput{}, errors.New("old_string and new_string must differ")
	}
	target, err := t.resolve("edit", in.FilePath)
	if err != nil {
		return EditOutput{}, err
	}
	out, err := t.editFile(ctx, call, target, in.OldString, in.NewString, in.ReplaceAll != nil && *in.ReplaceAll)
	if err != nil {
		return EditOutput{}, remediate(err)
	}
	return out, nil
}

// editFile performs one edit: the guard check, the read, the literal replacement, the
// atomic write-back and the new observation happen under the target's lock.
func (t *Tools) editFile(ctx context.Context, call *tool.Call, target Target, oldS, newS string, all bool) (EditOutput, error) {
	display := target.Path
	unlock := t.locks.lock(target.Rel)
	defer unlock()
	var guard observation
	guarded := t.obs != nil
	if guarded {
		ob, seen := t.obs.get(call.Agent(), target.Rel)
		switch {
		case !seen:
			return EditOutput{}, fsError(CodeNotObserved, "edit requires reading %q first", display)
		case !ob.present:
			return EditOutput{}, fsError(CodeNotFound, "cannot edit %q: not found", display)
		}
		guard = ob
	}

	stale := fsError(CodeStaleVersion, "cannot edit %q: file changed since it was read", display)
	f, fi, err := t.openFile("edit", target)
	if errors.Is(err, errAbsent) {
		return EditOutput{}, stale
	}
	if err != nil {
		return EditOutput{}, err
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return EditOutput{}, fsError(CodeNotRegularFile, "cannot edit %q: not a regular file", display)
	}
	if _, _, nlink, _ := identityOf(fi); nlink > 1 {
		return EditOutput{}, hardLinkDenied("edit", display, nlink, t.ws.dir)
	}
	if guarded && !statVersion(fi).sameMeta(guard.v) {
		return EditOutput{}, stale
	}
	if fi.Size() > t.editMax {
		return EditOutput{}, fsError(CodeTooLarge, "cannot edit %q: %d bytes exceeds the %d-byte limit", display, fi.Size(), t.editMax)
	}
	data, sum, sawNUL, err := t.readAll(ctx, "edit", display, f, fi.Size(), t.editMax, true)
	if err != nil {
		return EditOutput{}, err
	}
	if guarded && sum != guard.v.sum {
		return EditOutput{}, stale
	}
	switch {
	case sawNUL:
		return EditOutput{}, fsError(CodeNotText, "cannot edit %q: binary file", display)
	case data == nil:
		return EditOutput{}, fsError(CodeTooLarge, "cannot edit %q: content exceeds the %d-byte limit", display, t.editMax)
	case !utf8.Valid(data):
		return EditOutput{}, fsError(CodeNotText, "cannot edit %q: invalid UTF-8 text", display)
	}
	raw := trimBOM(data)
	bom := len(raw) < len(data)
	text := string(raw)
	crlf := mostlyCRLF(text)
	before := normalizeEOL(text)
	after, err := replaceLiteral(before, oldS, newS, all, display)
	if err != nil {
		return EditOutput{}, err
	}
	stored := after
	if crlf {
		stored = strings.ReplaceAll(after, "\n", "\r\n")
	}
	if bom {
		// The reference drops a byte-order mark on edit; dsh keeps the file's encoding marker.
		stored = string(utf8BOM) + stored
	}
	newFI, err := t.writeAtomic(ctx, "edit", display, target.Rel, []byte(stored), fi.Mode().Perm(), true, false)
	if err != nil {
		return EditOutput{}, err
	}
	t.observe(call, target, observation{present: true, v: t.versionAfter(newFI, []byte(stored))})
	return EditOutput{Path: display, Before: before, After: after}, nil
}

// replaceLiteral replaces oldS (CRLF normalized to LF, like the content) with newS in
// content: exactly one occurrence, or every occurrence with all. Matches do not overlap and
// are found left to right.
func replaceLiteral(content, oldS, newS string, all bool, display string) (string, error) {
	oldN := normalizeEOL(oldS)
	if oldN == "" {
		return "", fsError(CodeEditNotFound, "old_string must be a non-empty string")
	}
	newN := normalizeEOL(newS)
	n := strings.Count(content, oldN)
	switch {
	case n == 0:
		return "", fsError(CodeEditNotFound, "old_string was not found in %q", display)
	case n > 1 && !all:
		return "", fsError(CodeAmbiguousEdit, "old_string matched %d times in %q; provide a more specific old_string or set replace_all to true", n, display)
	}
	return strings.ReplaceAll(content, oldN, newN), nil
}

// mostlyCRLF reports whether the first 4096 UTF-16 code units of text hold more CRLF than
// bare LF line endings: such a file is written back with CRLF endings throughout.
func mostlyCRLF(text string) bool {
	units, end := 0, len(text)
	for i, r := range text {
		if units >= 4096 {
			end = i
			break
		}
		units += utf16.RuneLen(r) // a pair straddling the boundary cannot be a line ending
	}
	sample := text[:end]
	crlf := strings.Count(sample, "\r\n")
	lf := strings.Count(sample, "\n") - crlf
	return crlf > lf
}
