package coderuntime

import (
	"math"
	"testing"
)

func TestFormatNumber(t *testing.T) {
	tests := map[float64]string{
		0: "0", -1: "-1", 0.5: "0.5", 1e21: "1e+21", 1e-7: "1e-7", 123456: "123456",
		2147483648: "2147483648", math.NaN(): "NaN", math.Inf(1): "Infinity", math.Inf(-1): "-Infinity",
		-2.5e-8: "-2.5e-8", 1.5e300: "1.5e+300",
	}
	for v, want := range tests {
		if got := FormatNumber(v); got != want {
			t.Errorf("FormatNumber(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestLimitsResolve(t *testing.T) {
	got, err := Limits{}.Resolve()
	if err != nil || got != (Limits{DefaultComputeMs, DefaultMaxWallMs, DefaultMaxOutputBytes, DefaultMaxHeapMB}) {
		t.Fatalf("defaults = %+v, %v", got, err)
	}
	for _, tc := range []struct {
		l    Limits
		want string
	}{
		{Limits{ComputeMs: -1}, "config.computeMs must be a positive number, got -1"},
		{Limits{MaxWallMs: math.NaN()}, "config.maxWallMs must be a positive number, got NaN"},
		{Limits{MaxOutputBytes: 3}, "config.maxOutputBytes must be a safe integer of at least 4, got 3"},
		{Limits{MaxWallMs: 2147483648}, "config.maxWallMs must be at most 2147483647 (Node clamps a longer setTimeout delay to 1ms), got 2147483648"},
		{Limits{MaxHeapMB: 1 << 21}, "config.maxHeapMb must be at most 1048576, got 2097152"},
	} {
		if _, err := tc.l.Resolve(); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: err = %v, want %s", tc.l, err, tc.want)
		}
	}
}
