package schema

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/jsonv"
)

const readArgsSchema = `{"type":"object","properties":{
	"file_path":{"type":"string","description":"absolute path"},
	"offset":{"type":"integer"},
	"limit":{"type":"integer"},
	"mode":{"type":"string","enum":["text","binary"]}},
	"required":["file_path"],"additionalProperties":false}`

func BenchmarkValidateSmallArgs(b *testing.B) {
	s := compile(b, readArgsSchema)
	v := parse(b, `{"file_path":"/work/main/schema/validate.go","offset":10,"limit":200,"mode":"text"}`)
	b.ReportAllocs()
	for b.Loop() {
		if vs := s.Validate(v, RootArguments); vs != nil {
			b.Fatal(vs)
		}
	}
}

func BenchmarkValidateSmallArgsInvalid(b *testing.B) {
	s := compile(b, readArgsSchema)
	v := parse(b, `{"offset":1.5,"limit":"200","mode":"hex","extra":true}`)
	b.ReportAllocs()
	for b.Loop() {
		if vs := s.Validate(v, RootArguments); len(vs) != 5 {
			b.Fatal(vs)
		}
	}
}

const documentSchema = `{"type":"object","properties":{
	"records":{"type":"array","items":{"type":"object","properties":{
		"id":{"type":"integer"},
		"name":{"type":"string"},
		"score":{"type":"number"},
		"active":{"type":"boolean"},
		"kind":{"type":"string","enum":["file","dir","link"]},
		"tags":{"type":"array","items":{"type":"string"}},
		"parent":{"oneOf":[{"type":"null"},{"type":"integer"}]},
		"meta":{}},
		"required":["id","name","kind"],"additionalProperties":false}}},
	"required":["records"]}`

// document builds a JSON document of about size bytes that conforms to documentSchema.
func document(size int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"records":[`)
	for i := 0; sb.Len() < size; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		parent := "null"
		if i%3 != 0 {
			parent = fmt.Sprint(i / 3)
		}
		fmt.Fprintf(&sb, `{"id":%d,"name":"record number %d","score":%d.25,"active":%t,"kind":"%s","tags":["alpha","beta","gamma"],"parent":%s,"meta":{"size":%d,"path":["a","b"]}}`,
			i, i, i, i%2 == 0, []string{"file", "dir", "link"}[i%3], parent, i*7)
	}
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

func BenchmarkValidate1MB(b *testing.B) {
	s := compile(b, documentSchema)
	data := document(1 << 20)
	v := parse(b, string(data))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if vs := s.Validate(v, RootValue); vs != nil {
			b.Fatal(vs)
		}
	}
}

func BenchmarkValid1MB(b *testing.B) {
	s := compile(b, documentSchema)
	data := document(1 << 20)
	v := parse(b, string(data))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if !s.Valid(v) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	raw := parse(b, documentSchema)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAssert(b *testing.B) {
	raw := parse(b, documentSchema)
	b.ReportAllocs()
	for b.Loop() {
		if err := Assert(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFor(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := For[inferArgs](); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDocumentConforms keeps the benchmark document honest.
func TestDocumentConforms(t *testing.T) {
	s := compile(t, documentSchema)
	v, err := jsonv.Parse(document(10_000))
	if err != nil {
		t.Fatal(err)
	}
	check(t, s, v, RootValue, nil)
}
