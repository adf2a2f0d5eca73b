package coderuntime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/jsonv"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// resultBytes is what the ledger bounds: JSON(logs) plus JSON(value) or JSON(message).
func resultBytes(t interface{ Fatal(...any) }, r coderuntime.Result) int {
	logs := make([]any, len(r.Logs))
	for i, s := range r.Logs {
		logs[i] = s
	}
	b, err := jsonv.Marshal(logs)
	if err != nil {
		t.Fatal(err)
	}
	n := len(b)
	switch {
	case r.Error != nil:
		m, err := jsonv.Marshal(r.Error.Message)
		if err != nil {
			t.Fatal(err)
		}
		n += len(m)
	case r.HasValue:
		v, err := jsonv.Marshal(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		n += len(v)
	}
	return n
}

func TestLedgerExactBoundaries(t *testing.T) {
	tests := []struct {
		name     string
		max      int
		logs     []string
		value    any
		hasValue bool
		wantKind coderuntime.FailureKind // "" = success
	}{
		// [] costs two bytes and "€" five.
		{"euro fits 7", 7, nil, "€", true, ""},
		{"euro fails 6", 6, nil, "€", true, coderuntime.FailureOutputLimit},
		// ["abc"] costs seven bytes and "xy" four.
		{"abc+xy fits 11", 11, []string{"abc"}, "xy", true, ""},
		{"abc+xy fails 10", 10, []string{"abc"}, "xy", true, coderuntime.FailureOutputLimit},
		{"no value", 4, nil, nil, false, ""},
		{"null value", 6, nil, nil, true, ""},
		{"null value over", 5, nil, nil, true, coderuntime.FailureOutputLimit},
		{"object", 2 + len(`{"a":[1,true,"x"]}`), nil, jsonv.NewObject(jsonv.Member{Name: "a", Value: []any{1.0, true, "x"}}), true, ""},
		{"object over", 1 + len(`{"a":[1,true,"x"]}`), nil, jsonv.NewObject(jsonv.Member{Name: "a", Value: []any{1.0, true, "x"}}), true, coderuntime.FailureOutputLimit},
		{"number formatting", 2 + len("1e+21"), nil, 1e21, true, ""},
		{"escapes", 2 + len(`"\"\\\n\u0001"`), nil, "\"\\\n\x01", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := coderuntime.NewLedger(tt.max)
			logs := tt.logs
			for _, s := range logs {
				if !l.Admit(s) {
					t.Fatalf("Admit(%q) = false", s)
				}
			}
			r := l.Success(logs, tt.value, tt.hasValue)
			if tt.wantKind == "" {
				if r.Error != nil {
					t.Fatalf("Success = %+v, want no error", r.Error)
				}
				if r.HasValue != tt.hasValue {
					t.Fatalf("HasValue = %v", r.HasValue)
				}
				if got := resultBytes(t, r); got > tt.max {
					t.Fatalf("result is %d bytes, cap %d", got, tt.max)
				}
				return
			}
			if r.Error == nil || r.Error.Kind != tt.wantKind {
				t.Fatalf("Success error = %+v, want kind %s", r.Error, tt.wantKind)
			}
			if r.HasValue {
				t.Fatal("a failed result has a value")
			}
			if got := resultBytes(t, r); got > tt.max {
				t.Fatalf("result is %d bytes, cap %d", got, tt.max)
			}
		})
	}
}

func TestLedgerFailureMessageBoundary(t *testing.T) {
	// ["abc"] = 7 bytes, "xy" = 4 bytes.
	l := coderuntime.NewLedger(11)
	l.Admit("abc")
	r := l.Failure([]string{"abc"}, coderuntime.Failure{Kind: coderuntime.FailureException, Message: "xy"})
	want := coderuntime.Result{Logs: []string{"abc"}, Error: &coderuntime.Failure{Kind: coderuntime.FailureException, Message: "xy"}}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Fatalf("Failure (-want +got):\n%s", diff)
	}
	l = coderuntime.NewLedger(10)
	l.Admit("abc")
	r = l.Failure([]string{"abc"}, coderuntime.Failure{Kind: coderuntime.FailureException, Message: "xy"})
	if r.Error.Kind != coderuntime.FailureOutputLimit {
		t.Fatalf("kind = %s, want output-limit", r.Error.Kind)
	}
	if got := resultBytes(t, r); got > 10 {
		t.Fatalf("%d bytes > 10", got)
	}
}

func TestLedgerLimit(t *testing.T) {
	tests := []struct {
		name     string
		max      int
		logs     []string
		wantLogs []string
		wantMsg  string
	}{
		{"huge abort reason before start", 64, nil, []string{}, "outer output exceeded 64 bytes"},
		{"minimal cap truncates the message", 4, nil, []string{}, ""},
		{"message partly fits", 10, nil, []string{}, "outer "},
		// 96 - 32 (message) = 64 for the logs array: [ + "start-" ... ] .
		{"oversized first log keeps a prefix", 96, []string{"start-" + strings.Repeat("x", 500)}, []string{"start-" + strings.Repeat("x", 54)}, "outer output exceeded 96 bytes"},
		{"escaped characters are never split", 40, []string{strings.Repeat(`"`, 100)}, []string{`""`}, "outer output exceeded 40 bytes"},
		{"later logs dropped", 60, []string{"aaaa", "bbbb", strings.Repeat("c", 100), "dddd"}, []string{"aaaa", "bbbb", strings.Repeat("c", 10)}, "outer output exceeded 60 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := coderuntime.NewLedger(tt.max)
			r := l.Limit(tt.logs)
			want := coderuntime.Result{Logs: tt.wantLogs, Error: &coderuntime.Failure{Kind: coderuntime.FailureOutputLimit, Message: tt.wantMsg}}
			if diff := cmp.Diff(want, r); diff != "" {
				t.Errorf("Limit (-want +got):\n%s", diff)
			}
			if got := resultBytes(t, r); got > tt.max {
				t.Errorf("result is %d bytes, cap %d", got, tt.max)
			}
		})
	}
}

func TestLedgerInvalidCompletion(t *testing.T) {
	l := coderuntime.NewLedger(1 << 20)
	r := l.Success(nil, map[string]any{"a": 1}, true)
	if r.Error == nil || r.Error.Kind != coderuntime.FailureInvalidOutput || r.Error.Message != "program completion must be lossless JSON" {
		t.Fatalf("Success = %+v", r.Error)
	}
}

func TestLedgerAdmitAndFit(t *testing.T) {
	l := coderuntime.NewLedger(12)
	if !l.Admit("ab") { // ["ab"] = 6
		t.Fatal("Admit(ab) = false")
	}
	if l.Admit("abcd") { // ,"abcd" = 7 > 6 left
		t.Fatal("Admit(abcd) = true")
	}
	if got := l.Fit("abcd"); got != "abc" { // ,"abc" = 6
		t.Fatalf("Fit = %q", got)
	}
	if l.Remaining() != 6 {
		t.Fatalf("Remaining = %d", l.Remaining())
	}
	if !l.Admit("abc") || l.Remaining() != 0 {
		t.Fatalf("Admit(abc) / Remaining = %d", l.Remaining())
	}
}

func TestJSONStringBytesMatchesMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "s")
		want, err := jsonv.Marshal(s)
		if err != nil {
			t.Skip("not valid UTF-8")
		}
		if got := coderuntime.JSONStringBytes(s); got != len(want) {
			t.Fatalf("JSONStringBytes(%q) = %d, want %d (%s)", s, got, len(want), want)
		}
	})
}

func TestTruncateJSONStringProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "s")
		max := rapid.IntRange(0, 64).Draw(t, "max")
		p := coderuntime.TruncateJSONString(s, max)
		if !strings.HasPrefix(s, p) {
			t.Fatalf("%q is not a prefix of %q", p, s)
		}
		if !utf8.ValidString(p) && utf8.ValidString(s) {
			t.Fatalf("prefix %q splits a character", p)
		}
		if max >= 2 && coderuntime.JSONStringBytes(p) > max {
			t.Fatalf("prefix %q costs %d > %d", p, coderuntime.JSONStringBytes(p), max)
		}
		if p != s && max >= 2 {
			// One more character would not fit.
			_, w := utf8.DecodeRuneInString(s[len(p):])
			if coderuntime.JSONStringBytes(s[:len(p)+w]) <= max {
				t.Fatalf("prefix %q of %q is not the longest fitting one under %d", p, s, max)
			}
		}
	})
}

// TestLedgerNeverExceedsCap checks the central invariant: whatever the logs and outcome,
// the finalized result stays within the cap and its logs are a prefix of what was printed
// (the last entry possibly truncated).
func TestLedgerNeverExceedsCap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		max := rapid.IntRange(4, 200).Draw(t, "max")
		printed := rapid.SliceOfN(rapid.String(), 0, 8).Draw(t, "logs")
		l := coderuntime.NewLedger(max)
		var kept []string
		var r coderuntime.Result
		limited := false
		for _, s := range printed {
			if !l.Admit(s) {
				r = l.Limit(append(kept, s))
				limited = true
				break
			}
			kept = append(kept, s)
		}
		if !limited {
			switch rapid.IntRange(0, 2).Draw(t, "outcome") {
			case 0:
				r = l.Success(kept, rapid.String().Draw(t, "value"), true)
			case 1:
				r = l.Failure(kept, coderuntime.Failure{Kind: coderuntime.FailureException, Message: rapid.String().Draw(t, "message")})
			default:
				r = l.Success(kept, nil, false)
			}
		}
		for _, s := range printed {
			if !utf8.ValidString(s) {
				t.Skip("invalid UTF-8 is measured as U+FFFD; Marshal rejects it")
			}
		}
		if got := resultBytes(t, r); got > max {
			t.Fatalf("result %+v is %d bytes, cap %d", r, got, max)
		}
		for i, s := range r.Logs {
			if i == len(r.Logs)-1 {
				if !strings.HasPrefix(printed[i], s) {
					t.Fatalf("last log %q is not a prefix of %q", s, printed[i])
				}
				continue
			}
			if s != printed[i] {
				t.Fatalf("log %d = %q, want %q", i, s, printed[i])
			}
		}
	})
}

func TestJSONValueBytesUpTo(t *testing.T) {
	deep := any("leaf")
	for range 5000 {
		deep = []any{deep}
	}
	values := []any{
		nil, true, false, 0.0, -1.5, 1e21, 1e-7, 123456789.0, "€\u2028<>&",
		[]any{}, jsonv.NewObject(),
		[]any{1.0, []any{2.0, jsonv.NewObject(jsonv.Member{Name: "k\"", Value: "v"})}},
		deep,
	}
	for _, v := range values {
		want, err := jsonv.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		n, fits, err := coderuntime.JSONValueBytesUpTo(v, len(want))
		if err != nil || !fits || n != len(want) {
			t.Errorf("JSONValueBytesUpTo(%.40s, %d) = %d, %v, %v", want, len(want), n, fits, err)
		}
		if _, fits, _ := coderuntime.JSONValueBytesUpTo(v, len(want)-1); fits {
			t.Errorf("JSONValueBytesUpTo(%.40s, %d) fits", want, len(want)-1)
		}
	}
	for _, bad := range []any{map[string]any{}, 1, float32(1)} {
		if _, _, err := coderuntime.JSONValueBytesUpTo(bad, 100); err == nil {
			t.Errorf("JSONValueBytesUpTo(%T) = nil error", bad)
		}
	}
}

func TestAbortMessage(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("user-cancel"))
	if got := coderuntime.AbortMessage(ctx); got != "user-cancel" {
		t.Errorf("AbortMessage = %q", got)
	}
	ctx, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if got := coderuntime.AbortMessage(ctx); got != "context canceled" {
		t.Errorf("AbortMessage = %q", got)
	}
}

func FuzzJSONStringBytes(f *testing.F) {
	for _, s := range []string{"", "abc", "€", "\"\\\n\x01\x7f", "\xff", "😀", "\u2028"} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		n := coderuntime.JSONStringBytes(s)
		if m, err := jsonv.Marshal(s); err == nil && len(m) != n {
			t.Fatalf("JSONStringBytes(%q) = %d, Marshal gives %d", s, n, len(m))
		}
		p := coderuntime.TruncateJSONString(s, max)
		if !strings.HasPrefix(s, p) {
			t.Fatalf("not a prefix")
		}
		if max >= 2 && coderuntime.JSONStringBytes(p) > max {
			t.Fatalf("prefix too long")
		}
		if _, ok := coderuntime.JSONStringBytesUpTo(s, max); ok != (max >= n) {
			t.Fatalf("JSONStringBytesUpTo(%q, %d) = %v, size %d", s, max, ok, n)
		}
	})
}

func ExampleLedger() {
	l := coderuntime.NewLedger(50)
	logs := []string{"abc"}
	for _, s := range logs {
		l.Admit(s) // ["abc"] is 7 bytes
	}
	fmt.Println(l.Success(logs, "xy", true).Error == nil) // "xy" is 4 more: fits
	r := l.Success(logs, strings.Repeat("x", 45), true)   // 47 more: does not
	fmt.Println(r.Logs, r.Error)
	// Output:
	// true
	// [abc] output-limit: outer output exceeded 50 bytes
}
