package jsonv

import (
	"bytes"
	"fmt"
	"math"
	"testing"
)

// TestAppendMarshal: AppendMarshal appends exactly Marshal's bytes, and on error leaves dst
// as it was (no partial value).
func TestAppendMarshal(t *testing.T) {
	tests := []struct {
		name    string
		v       any
		wantErr bool
	}{
		{"object", NewObject(Member{Name: "text", Value: "x"}, Member{Name: "n", Value: 1e21}), false},
		{"nested", []any{NewObject(Member{Name: "a", Value: []any{true, nil}}), "\u2028"}, false},
		{"scalar", 0.1, false},
		{"NaN inside", []any{1.0, NewObject(Member{Name: "n", Value: math.NaN()})}, true},
		{"Go map", map[string]any{"a": 1.0}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte(`{"value":`)
			got, err := AppendMarshal(bytes.Clone(prefix), tc.v)
			want, werr := Marshal(tc.v)
			if (err != nil) != tc.wantErr || (werr != nil) != tc.wantErr {
				t.Fatalf("errors %v and %v, want error %v", err, werr, tc.wantErr)
			}
			if tc.wantErr {
				if err.Error() != werr.Error() || !bytes.Equal(got, prefix) {
					t.Fatalf("on error got %q (%v), want %q (%v)", got, err, prefix, werr)
				}
				return
			}
			if !bytes.Equal(got, append(prefix, want...)) {
				t.Fatalf("got %s, want %s%s", got, prefix, want)
			}
		})
	}
}

func ExampleAppendMarshal() {
	line := []byte(`{"id":1,"value":`)
	line, err := AppendMarshal(line, NewObject(Member{Name: "text", Value: "x"}))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(append(line, '}')))
	// Output: {"id":1,"value":{"text":"x"}}
}
