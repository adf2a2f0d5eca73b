package schema

import (
	"strings"
	"testing"

	"github.com/dsh-go/dsh/jsonv"
)

// FuzzAssert feeds arbitrary JSON text to Assert and Compile: they must not panic, must
// agree, and an accepted schema must project back to the text's value.
func FuzzAssert(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"type":"string","enum":["a","b"],"const":"a"}`,
		`{"type":"object","properties":{"a":{"type":"integer"},"b":{"oneOf":[{"type":"null"},{"type":"array","items":{}}]}},"required":["a"],"additionalProperties":false}`,
		`{"oneOf":[{"type":"string"},{"type":"number"}],"items":{}}`,
		`{"type":["string","null"],"minimum":1,"$ref":"#"}`,
		`{"type":"object","properties":{"x":{"type":"tuple"}},"required":["y",1]}`,
		`{"type":"integer","enum":[1.5],"const":-1}`,
		`{"description":1,"title":[],"default":{"a":[1,2]}}`,
		`[{"type":"string"}]`,
		`null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, err := jsonv.Parse(data)
		if err != nil {
			return
		}
		aerr := Assert(raw)
		s, cerr := Compile(raw)
		if (aerr == nil) != (cerr == nil) {
			t.Fatalf("Assert = %v but Compile = %v", aerr, cerr)
		}
		if aerr != nil {
			se, ok := aerr.(*Error)
			if !ok || len(se.Violations) == 0 {
				t.Fatalf("Assert error %#v", aerr)
			}
			for _, v := range se.Violations {
				if !strings.HasPrefix(v, "schema") {
					t.Fatalf("violation %q is not rooted at schema", v)
				}
			}
			return
		}
		want, _ := jsonv.Marshal(raw)
		if got := s.String(); got != string(want) {
			t.Fatalf("String = %s, want %s", got, want)
		}
		// The schema text is also a value: validating it must not panic.
		if vs := s.Validate(raw, RootValue); s.Valid(raw) != (len(vs) == 0) {
			t.Fatalf("Valid disagrees with Validate %q", vs)
		}
	})
}

// fuzzSchemas are the fixed schemas FuzzValidate checks values against.
var fuzzSchemas = []string{
	`{}`,
	`{"type":"object","properties":{"file_path":{"type":"string"},"limit":{"type":"integer"},"mode":{"type":"string","enum":["fast","slow"]}},"required":["file_path"],"additionalProperties":false}`,
	`{"type":"array","items":{"oneOf":[{"type":"null"},{"type":"number"},{"type":"object","properties":{"k":{"type":"boolean","const":true}},"required":["k"]}]}}`,
	`{"oneOf":[{"type":"number"},{"type":"integer"}]}`,
	`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"array","items":{"type":"array"}}}}}}`,
}

// FuzzValidate validates arbitrary JSON text against fixed schemas, as arguments and as
// an output value: no panic, Valid agrees, and a conforming verdict on an object or array
// means the value re-encodes.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		`{"file_path":"a.txt","limit":3}`,
		`{"file_path":1,"limit":1.5,"mode":"medium","extra":null}`,
		`[null,1,{"k":true},{"k":false},"x"]`,
		`3`,
		`1.5`,
		`{"a":{"b":[[],[1],{}]}}`,
		`{"__proto__":{"toString":[]}}`,
	} {
		f.Add([]byte(seed))
	}
	schemas := make([]*Schema, len(fuzzSchemas))
	for i, text := range fuzzSchemas {
		schemas[i] = compile(f, text)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := jsonv.Parse(data)
		if err != nil {
			return
		}
		for _, s := range schemas {
			for _, root := range []string{RootArguments, RootValue} {
				vs := s.Validate(v, root)
				if s.Valid(v) != (len(vs) == 0) {
					t.Fatalf("%s: Valid disagrees with Validate %q", s, vs)
				}
				for _, msg := range vs {
					if msg == "" || strings.Contains(msg, "lossless") {
						t.Fatalf("%s: unexpected violation %q for parsed text", s, msg)
					}
				}
			}
		}
	})
}
