package jsonv

import (
	"encoding/json"
	"testing"

	"github.com/dsh-go/dsh/internal/cputime"
)

// smallArgs is a typical tool-call argument object.
const smallArgs = `{"path":"/home/user/project/src/main.go","offset":120,"limit":80,"pattern":"func (\\w+)\\(","flags":["-n","--hidden"],"recursive":true}`

func benchParse(b *testing.B, data []byte) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseSmallArgs(b *testing.B) { benchParse(b, []byte(smallArgs)) }

// BenchmarkParseString parses argument texts as a model emits them, from a string: the
// typed call's one-member object, a small object of a few members, and smallArgs.
func BenchmarkParseString(b *testing.B) {
	for _, c := range []struct{ name, text string }{
		{"TypedCall", `{"text":"hello"}`},
		{"FewMembers", `{"path":"src/main.go","offset":10,"limit":20}`},
		{"SmallArgs", smallArgs},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			b.ReportAllocs()
			defer cputime.PerOp(b, "cpu-ns/op", 1)()
			for b.Loop() {
				if _, err := ParseString(c.text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParse1MB(b *testing.B) { benchParse(b, largeDocument(1<<20)) }

// BenchmarkEncodingJSONFloor decodes the Parse benchmarks' inputs with encoding/json into
// interface values, a floor to read Parse's figures against: it checks less (duplicate
// names, -0, member order) and builds maps, but reads the same bytes.
func BenchmarkEncodingJSONFloor(b *testing.B) {
	for _, c := range []struct {
		name string
		data []byte
	}{{"SmallArgs", []byte(smallArgs)}, {"1MB", largeDocument(1 << 20)}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			b.ReportAllocs()
			for b.Loop() {
				var v any
				if err := json.Unmarshal(c.data, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchValues are parsed once for the encoding and copying benchmarks.
func benchValues(b *testing.B) map[string]any {
	b.Helper()
	small, err := ParseString(smallArgs)
	if err != nil {
		b.Fatal(err)
	}
	large, err := Parse(largeDocument(1 << 20))
	if err != nil {
		b.Fatal(err)
	}
	return map[string]any{"SmallArgs": small, "1MB": large}
}

func BenchmarkMarshal(b *testing.B)   { benchEncode(b, Marshal) }
func BenchmarkCanonical(b *testing.B) { benchEncode(b, Canonical) }
func BenchmarkMarshalIndent(b *testing.B) {
	benchEncode(b, func(v any) ([]byte, error) { return MarshalIndent(v, "  ") })
}

func benchEncode(b *testing.B, enc func(any) ([]byte, error)) {
	for name, v := range benchValues(b) {
		b.Run(name, func(b *testing.B) {
			out, _ := enc(v)
			b.SetBytes(int64(len(out)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := enc(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSnapshot(b *testing.B) {
	for name, v := range benchValues(b) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Snapshot(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("GoMap", func(b *testing.B) {
		m := map[string]any{"path": "/tmp/x", "offset": 120, "limit": int64(80), "flags": []string{"-n"}, "deep": map[string]any{"a": []any{1.5, true, nil}}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Snapshot(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkCheck(b *testing.B) {
	for name, v := range benchValues(b) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Check(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkClone(b *testing.B) {
	for name, v := range benchValues(b) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Clone(v)
			}
		})
	}
}

func BenchmarkEqual(b *testing.B) {
	for name, v := range benchValues(b) {
		w := Clone(v)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !Equal(v, w) {
					b.Fatal("not equal")
				}
			}
		})
	}
}

func BenchmarkFromGo(b *testing.B) {
	type args struct {
		Path      string   `json:"path"`
		Offset    int      `json:"offset"`
		Limit     int      `json:"limit"`
		Flags     []string `json:"flags"`
		Recursive bool     `json:"recursive"`
	}
	in := args{Path: "/home/user/project/src/main.go", Offset: 120, Limit: 80, Flags: []string{"-n", "--hidden"}, Recursive: true}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromGo(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	v, err := ParseString(smallArgs)
	if err != nil {
		b.Fatal(err)
	}
	var dst struct {
		Path   string   `json:"path"`
		Offset int      `json:"offset"`
		Flags  []string `json:"flags"`
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := Decode(v, &dst); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendCanonicalFlat measures the canonical form of typical flat tool-call
// arguments appended to a reused buffer, as a policy keying calls by them does: members in
// canonical order already, and out of it.
func BenchmarkAppendCanonicalFlat(b *testing.B) {
	for _, c := range []struct{ name, text string }{
		{"sorted", `{"command":"go test ./...","description":"run the tests","timeout":120000}`},
		{"unsorted", `{"path":"/home/user/project/src/main.go","offset":120,"limit":80,"recursive":true}`},
	} {
		v, err := ParseString(c.text)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 0, 256)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if buf, err = AppendCanonical(buf[:0], v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
