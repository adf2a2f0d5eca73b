// Package projectdoc finds a workspace's project instructions: the AGENTS.md files from the
// repository root down to the workspace, which dsh adds to the agent's system prompt.
package projectdoc

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// FileName is the name of a project instruction file.
const FileName = "AGENTS.md"

// DefaultMaxBytes is the default budget of all instruction files together (32 KiB), the
// same as Codex's.
const DefaultMaxBytes = 32 << 10

// File is one instruction file that was found.
type File struct {
	// Path is the file's absolute path.
	Path string
	// Size is the file's size in bytes; Used is how many of them went into the text.
	Size, Used int
}

// Truncated reports whether part of the file was left out for the size budget.
func (f File) Truncated() bool { return f.Used < f.Size }

// Doc is the project instructions of a workspace.
type Doc struct {
	// Root is the repository root (the nearest directory at or above the workspace holding
	// .git), or the workspace itself when there is none.
	Root string
	// Files are the non-empty instruction files, the root's first and the workspace's last.
	// A file that did not fit the budget at all is listed with Used 0.
	Files []File
	// Text is their contents joined, each under a line naming its file; "" when there are
	// none. A note at the end says when the budget cut something off.
	Text string
}

// Load reads the instructions of workspace: the AGENTS.md of every directory from the
// repository root down to workspace, as Codex does — root first, so the file nearest the
// workspace comes last and takes precedence where the files disagree. Without a
// repository only the workspace's own file counts. Empty files are skipped. The files
// share one budget of maxBytes (DefaultMaxBytes when 0 or less): the file that overshoots
// is cut at a character boundary, later ones are left out, and the text ends with a note
// saying so. A file that cannot be read (other than being absent) is an error naming it.
func Load(workspace string, maxBytes int) (Doc, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return Doc{}, fmt.Errorf("project instructions: workspace %q: %w", workspace, err)
	}
	dirs := []string{ws}
	root := ws
	for d := ws; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			root = d
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			dirs = []string{ws} // no repository: only the workspace's own file
			break
		}
		d = parent
		dirs = append(dirs, d)
	}
	doc := Doc{Root: root}
	var b strings.Builder
	left := maxBytes
	var skipped []string
	for i := len(dirs) - 1; i >= 0; i-- {
		path := filepath.Join(dirs[i], FileName)
		data, err := readFile(path)
		if err != nil {
			return Doc{}, err
		}
		if strings.TrimSpace(string(data)) == "" {
			continue
		}
		f := File{Path: path, Size: len(data)}
		if left == 0 {
			doc.Files = append(doc.Files, f)
			skipped = append(skipped, path)
			continue
		}
		used := data
		if len(used) > left {
			used = cutUTF8(used, left)
		}
		f.Used = len(used)
		left -= len(used)
		doc.Files = append(doc.Files, f)
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "--- %s ---\n%s", path, strings.TrimRight(string(used), "\n"))
		if f.Truncated() {
			skipped = append(skipped, fmt.Sprintf("the last %d bytes of %s", f.Size-f.Used, path))
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&b, "\n\n[The project instructions exceed their %d-byte budget; left out: %s.]", maxBytes, strings.Join(skipped, "; "))
	}
	doc.Text = b.String()
	return doc, nil
}

// readFile reads an instruction file; an absent one (or a directory of that name) is empty.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("project instructions: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, nil
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("project instructions: read %s: %w", path, err)
	}
	return data, nil
}

// cutUTF8 shortens b to at most n bytes without splitting a character.
func cutUTF8(b []byte, n int) []byte {
	b = b[:n]
	i := len(b) - 1
	for i > 0 && len(b)-i < utf8.UTFMax && !utf8.RuneStart(b[i]) {
		i--
	}
	if i >= 0 && !utf8.FullRune(b[i:]) {
		b = b[:i]
	}
	return b
}
