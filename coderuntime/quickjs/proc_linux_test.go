//go:build linux

package quickjs

import (
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	stat := "1234 (quickjs (test) x) R 1 1234 1234 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 8 0 100 0 0\n"
	if d, ok := parseStatCPU([]byte(stat)); !ok || d != 3*time.Second {
		t.Errorf("parseStatCPU = %v, %v", d, ok)
	}
	for _, bad := range []string{"", "1 (x) R 1 2", "1 (x) R 1 2 3 4 5 6 7 8 9 10 x 0"} {
		if _, ok := parseStatCPU([]byte(bad)); ok {
			t.Errorf("parseStatCPU(%q) ok", bad)
		}
	}
}
