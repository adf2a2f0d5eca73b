package jsonv

import (
	"bytes"
	"strings"
	"testing"
)

const deep = MaxDepth // the depth the spec requires every operation to survive

// deepArray returns [[[…[leaf]…]]] nested n deep.
func deepArray(n int, leaf any) any {
	v := leaf
	for range n {
		v = []any{v}
	}
	return v
}

// deepObject returns {"k":{"k":…{"k":leaf}…}} nested n deep.
func deepObject(n int, leaf any) any {
	v := leaf
	for range n {
		v = NewObject(Member{Name: "k", Value: v})
	}
	return v
}

func TestDeepValues(t *testing.T) {
	for _, tt := range []struct {
		name        string
		build       func(int, any) any
		open, close string
		prettyHead  string // the first three lines of MarshalIndent(v, " ")
	}{
		{"arrays", deepArray, "[", "]", "[\n [\n  ["},
		{"objects", deepObject, `{"k":`, "}", "{\n \"k\": {\n  \"k\": {"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Repeat(tt.open, deep) + `"leaf"` + strings.Repeat(tt.close, deep)
			want := tt.build(deep, "leaf")

			parsed, err := ParseString(text)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !Equal(parsed, want) {
				t.Fatal("Parse result is not Equal to the built value")
			}
			if err := Check(want); err != nil {
				t.Fatalf("Check: %v", err)
			}
			snap, err := Snapshot(want)
			if err != nil {
				t.Fatalf("Snapshot: %v", err)
			}
			if !Equal(snap, want) || !Equal(Clone(want), want) {
				t.Fatal("Snapshot or Clone is not Equal to its input")
			}
			if Equal(want, tt.build(deep, "other")) {
				t.Fatal("Equal ignores a difference at the bottom")
			}
			for name, enc := range map[string]func(any) ([]byte, error){"Marshal": Marshal, "Canonical": Canonical} {
				out, err := enc(want)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if string(out) != text {
					t.Fatalf("%s output differs from the compact text", name)
				}
			}
			pretty, err := MarshalIndent(want, " ")
			if err != nil {
				t.Fatalf("MarshalIndent: %v", err)
			}
			// Each level adds a line break before its child and one before its closing,
			// indented by the depth: deep² spaces in all, plus one after each colon.
			wantLen := len(text) + 2*deep + deep*deep + strings.Count(text, ":")
			if len(pretty) != wantLen || bytes.Count(pretty, []byte("\n")) != 2*deep {
				t.Errorf("MarshalIndent is %d bytes with %d line breaks, want %d and %d",
					len(pretty), bytes.Count(pretty, []byte("\n")), wantLen, 2*deep)
			}
			head := strings.Join(strings.SplitN(string(pretty), "\n", 4)[:3], "\n")
			if head != tt.prettyHead {
				t.Errorf("MarshalIndent starts %q, want %q", head, tt.prettyHead)
			}
		})
	}
}

// TestBeyondParserDepth shows the walkers themselves have no depth limit: only Parse does.
func TestBeyondParserDepth(t *testing.T) {
	const n = 10 * deep
	v := deepArray(n/2, deepObject(n/2, 1.0))
	if err := Check(v); err != nil {
		t.Fatal(err)
	}
	out, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(out); err == nil || !strings.Contains(err.Error(), "exceeded max depth") {
		t.Errorf("Parse of %d levels: %v, want a depth error", n, err)
	}
	snap, err := Snapshot(v)
	if err != nil || !Equal(snap, v) {
		t.Fatalf("Snapshot: %v", err)
	}
	if c, err := Canonical(v); err != nil || !bytes.Equal(c, out) {
		t.Fatalf("Canonical: %v", err)
	}
}

func TestDeepCycle(t *testing.T) {
	// A cycle far below the point where the ancestry switches from a list to a set.
	root := NewObject(Member{Name: "k", Value: nil})
	cur := root
	for range 100 {
		next := NewObject(Member{Name: "k", Value: nil})
		cur.Set("k", next)
		cur = next
	}
	cur.Set("k", []any{root})
	want := "$" + strings.Repeat(".k", 101) + "[0] is circular"
	for name, f := range map[string]func() error{
		"Check":    func() error { return Check(root) },
		"Snapshot": func() error { _, err := Snapshot(root); return err },
		"Marshal":  func() error { _, err := Marshal(root); return err },
	} {
		if err := f(); err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%s: %v, want an error ending %q", name, err, want)
		}
	}
}
