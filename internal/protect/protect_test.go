package protect

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"pgregory.net/rapid"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tempDir is t.TempDir with its symbolic links resolved, so expectations can be spelled
// exactly.
func tempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mkdir(t testing.TB, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, p, data string) {
	t.Helper()
	mkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustNew(t testing.TB, cfg Config) *Set {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return s
}

func TestPaths(t *testing.T) {
	t.Run("a repository directory", func(t *testing.T) {
		ws, home := tempDir(t), tempDir(t)
		mkdir(t, filepath.Join(ws, ".git", "hooks"))
		got := mustNew(t, Config{Workspace: ws, Home: home}).Paths()
		want := []string{filepath.Join(ws, ".git"), filepath.Join(ws, ".dsh"), home}
		if !slices.Equal(got, want) {
			t.Errorf("Paths = %q, want %q", got, want)
		}
	})
	t.Run("nothing exists yet, no home", func(t *testing.T) {
		ws := tempDir(t)
		got := mustNew(t, Config{Workspace: ws}).Paths()
		want := []string{filepath.Join(ws, ".git"), filepath.Join(ws, ".dsh")}
		if !slices.Equal(got, want) {
			t.Errorf("Paths = %q, want %q", got, want)
		}
	})
	t.Run("a linked worktree's .git file", func(t *testing.T) {
		ws, main := tempDir(t), tempDir(t)
		gitdir := filepath.Join(main, ".git", "worktrees", "wt")
		writeFile(t, filepath.Join(gitdir, "commondir"), "../..\n")
		writeFile(t, filepath.Join(ws, ".git"), "gitdir: "+gitdir+"\n")
		got := mustNew(t, Config{Workspace: ws}).Paths()
		want := []string{filepath.Join(ws, ".git"), gitdir, filepath.Join(main, ".git"), filepath.Join(ws, ".dsh")}
		if !slices.Equal(got, want) {
			t.Errorf("Paths = %q, want %q", got, want)
		}
	})
	t.Run("a relative gitdir", func(t *testing.T) {
		ws := tempDir(t)
		writeFile(t, filepath.Join(ws, "store", "HEAD"), "ref: refs/heads/main\n")
		writeFile(t, filepath.Join(ws, ".git"), "gitdir: store")
		got := mustNew(t, Config{Workspace: ws}).Paths()
		want := []string{filepath.Join(ws, ".git"), filepath.Join(ws, "store"), filepath.Join(ws, ".dsh")}
		if !slices.Equal(got, want) {
			t.Errorf("Paths = %q, want %q", got, want)
		}
	})
	t.Run("a .git symbolic link", func(t *testing.T) {
		ws, elsewhere := tempDir(t), tempDir(t)
		if err := os.Symlink(elsewhere, filepath.Join(ws, ".git")); err != nil {
			t.Fatal(err)
		}
		got := mustNew(t, Config{Workspace: ws}).Paths()
		want := []string{filepath.Join(ws, ".git"), elsewhere, filepath.Join(ws, ".dsh")}
		if !slices.Equal(got, want) {
			t.Errorf("Paths = %q, want %q", got, want)
		}
	})
	t.Run("a .git file that is not a pointer", func(t *testing.T) {
		ws := tempDir(t)
		writeFile(t, filepath.Join(ws, ".git"), "not a pointer\n")
		got := mustNew(t, Config{Workspace: ws}).Paths()
		want := []string{filepath.Join(ws, ".git"), filepath.Join(ws, ".dsh")}
		if !slices.Equal(got, want) {
			t.Errorf("Paths = %q, want %q", got, want)
		}
	})
	t.Run("opened paths", func(t *testing.T) {
		ws := tempDir(t)
		s := mustNew(t, Config{Workspace: ws, Open: []string{".git/hooks", "/abs/x/../y"}})
		want := []string{filepath.Join(ws, ".git", "hooks"), "/abs/y"}
		if got := s.Opened(); !slices.Equal(got, want) {
			t.Errorf("Opened = %q, want %q", got, want)
		}
	})
}

func TestCovering(t *testing.T) {
	ws, home, elsewhere := tempDir(t), tempDir(t), tempDir(t)
	mkdir(t, filepath.Join(ws, ".git", "hooks"))
	mkdir(t, filepath.Join(ws, "src"))
	if err := os.Symlink(".git", filepath.Join(ws, "innocent")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(ws, ".dsh"), filepath.Join(elsewhere, "cfg")); err != nil {
		t.Fatal(err)
	}
	git, dsh := filepath.Join(ws, ".git"), filepath.Join(ws, ".dsh")
	plain := mustNew(t, Config{Workspace: ws, Home: home})
	opened := mustNew(t, Config{Workspace: ws, Home: home, Open: []string{".git/hooks", home}})
	tests := []struct {
		name       string
		path       string
		plain, opn string // what plain and opened report
	}{
		{"a hook", ".git/hooks/pre-commit", git, ""},
		{"git config", ".git/config", git, git},
		{".git itself", ".git", git, git},
		{"case folded", ".GIT/config", git, git},
		{"project config", ".dsh/config.yaml", dsh, dsh},
		{"project config not yet there", ".dsh/new/x", dsh, dsh},
		{"through a link in the workspace", "innocent/config", git, git},
		{"a hook through a link", "innocent/hooks/x", git, ""},
		{"through a link outside", elsewhere + "/cfg/config.yaml", dsh, dsh},
		{"the home", home + "/config.yaml", home, ""},
		{"a source file", "src/main.go", "", ""},
		{"a look-alike", ".gitignore", "", ""},
		{"a look-alike directory", ".git-old/config", "", ""},
		{"the workspace", ".", "", ""},
		{"nested .git is not the workspace's", "src/.git/config", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.path
			if !filepath.IsAbs(p) {
				p = filepath.Join(ws, p)
			}
			if got := plain.Covering(p); got != tt.plain {
				t.Errorf("Covering(%q) = %q, want %q", p, got, tt.plain)
			}
			if got := opened.Covering(p); got != tt.opn {
				t.Errorf("with open paths, Covering(%q) = %q, want %q", p, got, tt.opn)
			}
		})
	}
	if got := plain.Covering(".git/config"); got != "" {
		t.Errorf("a relative path is covered: %q", got)
	}
	var none *Set
	if got := none.Covering(git); got != "" {
		t.Errorf("a nil set covers %q", got)
	}
}

func TestNewErrors(t *testing.T) {
	ws := tempDir(t)
	file := filepath.Join(ws, "f")
	writeFile(t, file, "x")
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"empty workspace", Config{}, "protect: the workspace is empty"},
		{"missing workspace", Config{Workspace: filepath.Join(ws, "gone")}, `protect: workspace "` + filepath.Join(ws, "gone") + `": stat`},
		{"workspace is a file", Config{Workspace: file}, `protect: workspace "` + file + `" is not a directory`},
		{"empty open path", Config{Workspace: ws, Open: []string{" "}}, "protect: an open path is empty"},
		{"NUL in an open path", Config{Workspace: ws, Open: []string{".git\x00x"}}, `protect: open path ".git\x00x" contains a NUL byte`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error starting %q", err, tt.want)
			}
		})
	}
}

// TestCoveringLexical: however a path is spelled with ".", ".." and case, it is covered
// exactly when it lands in .git or .dsh.
func TestCoveringLexical(t *testing.T) {
	ws := tempDir(t)
	s := mustNew(t, Config{Workspace: ws})
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.SampledFrom([]string{".git", ".GIT", ".dsh", "a", "..", ".", "hooks", ".gitx"}), 1, 6).Draw(t, "parts")
		p := filepath.Join(append([]string{ws}, parts...)...)
		rel, err := filepath.Rel(ws, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return // outside the workspace: not this property's business
		}
		first, _, _ := strings.Cut(rel, "/")
		want := strings.EqualFold(first, ".git") || strings.EqualFold(first, ".dsh")
		if got := s.Covering(p) != ""; got != want {
			t.Fatalf("Covering(%q) = %v, want %v", p, got, want)
		}
	})
}

// FuzzGitFile: whatever a cloned repository puts in its .git file, the set is computed,
// still protects the .git file itself and reports only absolute paths.
func FuzzGitFile(f *testing.F) {
	f.Add("gitdir: /elsewhere/.git/worktrees/x\n")
	f.Add("gitdir: ../store")
	f.Add("gitdir:\n")
	f.Add("\x00\xff")
	f.Add(strings.Repeat("gitdir: a/", 1000))
	ws := tempDir(f)
	git := filepath.Join(ws, ".git")
	f.Fuzz(func(t *testing.T, data string) {
		if err := os.WriteFile(git, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{Workspace: ws})
		if err != nil {
			t.Fatal(err)
		}
		paths := s.Paths()
		if len(paths) == 0 || paths[0] != git {
			t.Fatalf("Paths = %q", paths)
		}
		for _, p := range paths {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p {
				t.Fatalf("path %q is not absolute and clean", p)
			}
		}
		if s.Covering(filepath.Join(git, "x")) == "" && s.Covering(git) == "" {
			t.Fatal(".git is not covered")
		}
	})
}

// TestEnforced: a protected path an opened path equals or contains is no longer enforced;
// one opened only inside it stays enforced (a read-only mount cannot have a writable hole).
func TestEnforced(t *testing.T) {
	ws, home := tempDir(t), tempDir(t)
	mkdir(t, filepath.Join(ws, ".git", "hooks"))
	for _, tt := range []struct {
		name string
		open []string
		want []string
	}{
		{"nothing opened", nil, []string{filepath.Join(ws, ".git"), filepath.Join(ws, ".dsh"), home}},
		{".dsh opened", []string{".dsh"}, []string{filepath.Join(ws, ".git"), home}},
		{"inside .git opened", []string{".git/hooks"}, []string{filepath.Join(ws, ".git"), filepath.Join(ws, ".dsh"), home}},
		{"the workspace opened", []string{"."}, []string{home}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustNew(t, Config{Workspace: ws, Home: home, Open: tt.open}).Enforced(); !slices.Equal(got, tt.want) {
				t.Errorf("Enforced = %q, want %q", got, tt.want)
			}
		})
	}
}
