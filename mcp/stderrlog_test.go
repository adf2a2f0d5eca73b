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
