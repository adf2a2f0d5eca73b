package mcp

import (
	"errors"
	"strings"
	"testing"
)

func TestPrefixWriter(t *testing.T) {
	var out strings.Builder
	p := &prefixWriter{w: &out, prefix: []byte("[s] "), start: true}
	for _, chunk := range []string{"one\ntw", "o\n", "", "three\nfour\n"} {
		if n, err := p.Write([]byte(chunk)); err != nil || n != len(chunk) {
			t.Fatalf("Write(%q) = %d, %v", chunk, n, err)
		}
	}
	if got, want := out.String(), "[s] one\n[s] two\n[s] three\n[s] four\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	bad := &prefixWriter{w: failingWriter{}, prefix: []byte("x"), start: true}
	if n, err := bad.Write([]byte("a\n")); err == nil || n != 0 {
		t.Errorf("a failing log: %d, %v", n, err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// FuzzPrefixWriter checks that whatever a server writes, in whatever chunks, the log holds
// the same text with every line prefixed.
func FuzzPrefixWriter(f *testing.F) {
	f.Add([]byte("one\ntwo\n"), uint8(3))
	f.Add([]byte("\n\n\npartial"), uint8(1))
	f.Add([]byte("\x00\xff\r\n"), uint8(9))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		var out strings.Builder
		p := &prefixWriter{w: &out, prefix: []byte("[s] "), start: true}
		n := int(step%8) + 1
		for i := 0; i < len(data); i += n {
			chunk := data[i:min(i+n, len(data))]
			if w, err := p.Write(chunk); err != nil || w != len(chunk) {
				t.Fatalf("Write = %d, %v", w, err)
			}
		}
		var want strings.Builder
		for i, l := range strings.SplitAfter(string(data), "\n") {
			if l == "" && i > 0 {
				continue
			}
			if l != "" {
				want.WriteString("[s] " + l)
			}
		}
		if out.String() != want.String() {
			t.Fatalf("got %q, want %q", out.String(), want.String())
		}
	})
}
