package codemode_test

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/dsh-go/dsh/codemode"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites the file with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the snapshot (run go test -update after checking the change):\n%s", path, got)
	}
}

// TestSDKSnapshots pins both SDKs of the sample tool set byte for byte.
func TestSDKSnapshots(t *testing.T) {
	for _, c := range []struct{ lang, file string }{{"typescript", "sdk_typescript.golden"}, {"python", "sdk_python.golden"}} {
		t.Run(c.lang, func(t *testing.T) {
			section, err := codemode.SDKSection(sampleRegistry(t, c.lang, nil), nil)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, c.file, section)
		})
	}
}

// TestSDKIsIndependentOfRegistrationOrder renders the SDKs of the sample tools registered
// in random orders: the text is always the snapshot's.
func TestSDKIsIndependentOfRegistrationOrder(t *testing.T) {
	n := len(sampleDefinitions(t))
	base := map[string]string{}
	for _, lang := range []string{"typescript", "python"} {
		s, err := codemode.SDKSection(sampleRegistry(t, lang, nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		base[lang] = s
	}
	indexes := make([]int, n)
	for i := range indexes {
		indexes[i] = i
	}
	rapid.Check(t, func(rt *rapid.T) {
		order := rapid.Permutation(indexes).Draw(rt, "order")
		for _, lang := range []string{"typescript", "python"} {
			s, err := codemode.SDKSection(sampleRegistry(t, lang, order), nil)
			if err != nil {
				rt.Fatal(err)
			}
			if s != base[lang] {
				rt.Fatalf("%s SDK differs for registration order %v", lang, order)
			}
		}
	})
}

// TestPythonSDKParses checks the Python SDK of the sample tools with CPython's parser (the
// Starlark runtime never compiles the stub; the check keeps it honest Python). A missing
// python3 fails the test.
func TestPythonSDKParses(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is not installed, so the Python SDK is unchecked: run scripts/test-deps.sh (it installs the Debian package python3)")
	}
	section, err := codemode.SDKSection(sampleRegistry(t, "python", nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(section, "```python\n")
	code, _, _ := strings.Cut(after, "\n```")
	cmd := exec.Command(python, "-c", "import ast, sys; ast.parse(sys.stdin.read())")
	cmd.Stdin = strings.NewReader(code)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the Python SDK does not parse: %v\n%s\n%s", err, out, code)
	}
}
