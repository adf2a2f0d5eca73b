package projectdoc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// tree creates files (path → content) under a temporary directory and returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, text := range files {
		p := filepath.Join(root, name)
		dir := filepath.Dir(p)
		if strings.HasSuffix(name, "/") {
			dir = p
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, "/") {
			continue
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		ws       string // relative to the tree
		max      int
		want     []string // the files in order, relative to the tree
		text     []string // substrings of the text, in order
		notText  []string
		truncate bool
	}{
		{name: "root to workspace, nearest last",
			files: map[string]string{"repo/.git/": "", "repo/AGENTS.md": "root rules\n", "repo/svc/AGENTS.md": "svc rules\n", "repo/svc/api/AGENTS.md": "api rules\n", "AGENTS.md": "outside the repository"},
			ws:    "repo/svc/api", want: []string{"repo/AGENTS.md", "repo/svc/AGENTS.md", "repo/svc/api/AGENTS.md"},
			text:    []string{"AGENTS.md ---\nroot rules", "svc/AGENTS.md ---\nsvc rules", "api/AGENTS.md ---\napi rules"},
			notText: []string{"outside the repository", "budget"}},
		{name: "a .git file (a worktree) marks the root too",
			files: map[string]string{"repo/.git": "gitdir: elsewhere", "repo/AGENTS.md": "root", "AGENTS.md": "outside"},
			ws:    "repo", want: []string{"repo/AGENTS.md"}, notText: []string{"outside"}},
		{name: "no repository: only the workspace's file",
			files: map[string]string{"AGENTS.md": "parent", "w/AGENTS.md": "mine"},
			ws:    "w", want: []string{"w/AGENTS.md"}, text: []string{"mine"}, notText: []string{"parent"}},
		{name: "empty and missing files are skipped",
			files: map[string]string{"r/.git/": "", "r/AGENTS.md": " \n\n", "r/a/b/AGENTS.md": "deep"},
			ws:    "r/a/b", want: []string{"r/a/b/AGENTS.md"}},
		{name: "nothing at all", files: map[string]string{"x/": ""}, ws: "x"},
		{name: "the budget cuts the nearer file and drops the rest",
			files: map[string]string{"r/.git/": "", "r/AGENTS.md": "0123456789", "r/a/AGENTS.md": "abcdefghij", "r/a/b/AGENTS.md": "never"},
			ws:    "r/a/b", max: 15, want: []string{"r/AGENTS.md", "r/a/AGENTS.md", "r/a/b/AGENTS.md"},
			text:    []string{"0123456789", "abcde\n\n[The project instructions exceed their 15-byte budget; left out: the last 5 bytes of", "; ", "r/a/b/AGENTS.md.]"},
			notText: []string{"abcdef", "never\n"}, truncate: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tree(t, tt.files)
			doc, err := Load(filepath.Join(root, tt.ws), tt.max)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range doc.Files {
				rel, _ := filepath.Rel(root, f.Path)
				got = append(got, rel)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("files %v, want %v", got, tt.want)
			}
			at := 0
			for _, s := range tt.text {
				i := strings.Index(doc.Text[at:], s)
				if i < 0 {
					t.Errorf("text lacks %q after offset %d:\n%s", s, at, doc.Text)
					break
				}
				at += i + len(s)
			}
			for _, s := range tt.notText {
				if strings.Contains(doc.Text, s) {
					t.Errorf("text holds %q:\n%s", s, doc.Text)
				}
			}
			truncated := false
			for _, f := range doc.Files {
				truncated = truncated || f.Truncated()
			}
			if truncated != tt.truncate {
				t.Errorf("truncated = %v, want %v", truncated, tt.truncate)
			}
		})
	}
}

func TestLoadUnreadable(t *testing.T) {
	root := tree(t, map[string]string{"AGENTS.md/": ""})
	// A directory named AGENTS.md is not a file: nothing is loaded, nothing fails.
	if doc, err := Load(root, 0); err != nil || len(doc.Files) != 0 {
		t.Errorf("Load = %+v, %v", doc, err)
	}
	// A file that cannot be opened is an error naming it.
	if os.Geteuid() == 0 {
		root = tree(t, map[string]string{})
		if err := os.Symlink(filepath.Join(root, "loop"), filepath.Join(root, "loop")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("loop", filepath.Join(root, FileName)); err != nil {
			t.Fatal(err)
		}
	} else {
		root = tree(t, map[string]string{FileName: "secret"})
		if err := os.Chmod(filepath.Join(root, FileName), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Load(root, 0); err == nil || !strings.Contains(err.Error(), "project instructions") || !strings.Contains(err.Error(), FileName) {
		t.Errorf("Load of an unreadable file = %v", err)
	}
}

// TestCutUTF8 checks that a cut never splits a character and never exceeds the budget.
func TestCutUTF8(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "s")
		n := rapid.IntRange(0, len(s)).Draw(t, "n")
		got := cutUTF8([]byte(s), n)
		if len(got) > n || !strings.HasPrefix(s, string(got)) {
			t.Fatalf("cut(%q, %d) = %q", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.Valid(got) {
			t.Fatalf("cut(%q, %d) = %q splits a character", s, n, got)
		}
		if n-len(got) >= utf8.UTFMax {
			t.Fatalf("cut(%q, %d) = %q dropped too much", s, n, got)
		}
	})
}

func ExampleLoad() {
	dir, _ := os.MkdirTemp("", "projectdoc")
	defer os.RemoveAll(dir)
	os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("Run go vet before committing.\n"), 0o644)
	doc, _ := Load(dir, 0)
	fmt.Println(len(doc.Files), strings.HasSuffix(doc.Text, "Run go vet before committing."))
	// Output: 1 true
}
