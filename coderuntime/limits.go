package coderuntime

import (
	"context"
	"fmt"
	"math"
	"strconv"
)

// Defaults of the budgets every backend enforces: the reference worker-thread backend's.
const (
	DefaultComputeMs      = 60000    // busy time
	DefaultMaxWallMs      = 600000   // wall-clock ceiling
	DefaultMaxOutputBytes = 64 << 20 // the outer output ledger
	DefaultMaxHeapMB      = 512      // heap
)

// MaxWallMs is the largest wall-clock ceiling accepted (the reference's setTimeout limit).
const MaxWallMs = 2147483647

// maxHeapMB bounds the heap budget to something a process can be given.
const maxHeapMB = 1 << 20

// Limits are the budgets of one backend (docs/behaviour.md §10.8). A zero field means its default.
type Limits struct {
	ComputeMs      float64
	MaxWallMs      float64
	MaxOutputBytes int64
	MaxHeapMB      float64
}

// Resolve fills in the defaults of zero fields and validates the result with the messages
// of docs/behaviour.md §10.8, e.g. "config.computeMs must be a positive number, got -1".
func (l Limits) Resolve() (Limits, error) {
	if l.ComputeMs == 0 {
		l.ComputeMs = DefaultComputeMs
	}
	if l.MaxWallMs == 0 {
		l.MaxWallMs = DefaultMaxWallMs
	}
	if l.MaxOutputBytes == 0 {
		l.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if l.MaxHeapMB == 0 {
		l.MaxHeapMB = DefaultMaxHeapMB
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{"computeMs", l.ComputeMs}, {"maxWallMs", l.MaxWallMs}, {"maxOutputBytes", float64(l.MaxOutputBytes)}, {"maxHeapMb", l.MaxHeapMB}} {
		if err := CheckPositive(f.key, f.v); err != nil {
			return l, err
		}
	}
	if l.MaxOutputBytes < 4 || l.MaxOutputBytes > 1<<53-1 {
		return l, fmt.Errorf("config.maxOutputBytes must be a safe integer of at least 4, got %d", l.MaxOutputBytes)
	}
	if l.MaxWallMs > MaxWallMs {
		return l, fmt.Errorf("config.maxWallMs must be at most %d (Node clamps a longer setTimeout delay to 1ms), got %s", MaxWallMs, FormatNumber(l.MaxWallMs))
	}
	if l.MaxHeapMB > maxHeapMB {
		return l, fmt.Errorf("config.maxHeapMb must be at most %d, got %s", maxHeapMB, FormatNumber(l.MaxHeapMB))
	}
	return l, nil
}

// CheckPositive returns the docs/behaviour.md §10.8 error for a config value that is not a positive
// finite number, or nil.
func CheckPositive(key string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return fmt.Errorf("config.%s must be a positive number, got %s", key, FormatNumber(v))
	}
	return nil
}

// FormatNumber formats v the way JavaScript's String(v) does, as the reference's messages
// show config values: 1e+21, 1e-7, NaN, -Infinity.
func FormatNumber(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	case v == 0:
		return "0"
	}
	if a := math.Abs(v); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	s := strconv.FormatFloat(v, 'e', -1, 64) // 1e+21, 1e-07
	for i := 0; i+2 < len(s); i++ {
		if s[i] == 'e' && s[i+2] == '0' && len(s) > i+3 {
			s = s[:i+2] + s[i+3:]
			break
		}
	}
	return s
}

// Begin does what every backend does before it runs a program: it validates the bindings
// (an invalid declaration is a contract error), opens the output ledger, and, when ctx is
// already cancelled, returns the abort result — charged to the ledger, no program started —
// as early. A backend returns early as its outcome when it is not nil.
func Begin(ctx context.Context, req Request, maxOutputBytes int64) (ledger *Ledger, early *Result, err error) {
	if err := ValidateBindings(req.Bindings); err != nil {
		return nil, nil, err
	}
	ledger = NewLedger(int(maxOutputBytes))
	if ctx.Err() != nil {
		res := ledger.Failure(nil, Failure{Kind: FailureAbort, Message: AbortMessage(ctx)}).Normalized()
		return ledger, &res, nil
	}
	return ledger, nil, nil
}

// Normalized returns r with Logs non-nil, as every outcome reports its logs (possibly none).
func (r Result) Normalized() Result {
	if r.Logs == nil {
		r.Logs = []string{}
	}
	return r
}
