//go:build linux

package quickjs

import (
	"strings"
	"testing"
)

// TestWarmIfIdle checks when a worker makes its warm-up run: only a worker process whose
// program is not waiting yet (a pooled worker, idle), never one whose start frame is
// already in the pipe or whose input has closed, nor an in-process worker.
func TestWarmIfIdle(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T) *directPipe
		process bool
		want    bool
	}{
		{name: "idle worker process", process: true, want: true,
			setup: func(t *testing.T) *directPipe { r, _ := directPipePair(t); return r }},
		{name: "program waiting", process: true, want: false,
			setup: func(t *testing.T) *directPipe {
				r, w := directPipePair(t)
				if _, err := w.WriteString(`{"type":"start"}` + "\n"); err != nil {
					t.Fatal(err)
				}
				return r
			}},
		{name: "input closed", process: true, want: false,
			setup: func(t *testing.T) *directPipe { r, w := directPipePair(t); w.Close(); return r }},
		{name: "in process", process: false, want: false,
			setup: func(t *testing.T) *directPipe { r, _ := directPipePair(t); return r }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := warmIfIdle(tt.setup(t), tt.process); got != tt.want {
				t.Errorf("warmIfIdle = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("input that cannot wait", func(t *testing.T) {
		if warmIfIdle(strings.NewReader(""), true) {
			t.Error("warmIfIdle warmed up a worker whose input cannot be waited for")
		}
	})
}
