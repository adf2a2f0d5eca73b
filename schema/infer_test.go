package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-go/dsh/jsonv"
)

type position struct {
	Line   int `json:"line" jsonschema:"1-based line"`
	Column int `json:"column,omitempty"`
}

type Common struct {
	Verbose bool   `json:"verbose,omitempty"`
	Trace   string `json:"trace"`
}

type inferArgs struct {
	FilePath string            `json:"file_path" jsonschema:"the file to read"`
	Offset   *int              `json:"offset,omitempty" jsonschema:"first line"`
	Cursor   *string           `json:"cursor"`
	Tags     []string          `json:"tags,omitempty"`
	At       position          `json:"at"`
	Marks    []*position       `json:"marks"`
	Env      map[string]string `json:"env,omitzero"`
	Data     any               `json:"data"`
	Small    uint8             `json:"small"`
	Big      uint64            `json:"big"`
	Ratio    float32           `json:"ratio"`
	Blob     []byte            `json:"blob,omitempty"`
	When     time.Time         `json:"when"`
	Raw      json.RawMessage   `json:"raw,omitempty"`
	Value    jsonv.Value       `json:"value,omitempty"`
	Object   *jsonv.Object     `json:"object,omitempty"`
	Skipped  string            `json:"-"`
	hidden   string
	Common
}

func TestForStruct(t *testing.T) {
	s, err := For[inferArgs]()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{` +
		`"file_path":{"type":"string","description":"the file to read"},` +
		`"offset":{"type":"integer","description":"first line"},` +
		`"cursor":{"oneOf":[{"type":"null"},{"type":"string"}]},` +
		`"tags":{"type":"array","items":{"type":"string"}},` +
		`"at":{"type":"object","properties":{"line":{"type":"integer","description":"1-based line"},"column":{"type":"integer"}},"required":["line"],"additionalProperties":false},` +
		`"marks":{"type":"array","items":{"oneOf":[{"type":"null"},{"type":"object","properties":{"line":{"type":"integer","description":"1-based line"},"column":{"type":"integer"}},"required":["line"],"additionalProperties":false}]}},` +
		`"env":{"type":"object"},` +
		`"data":{},` +
		`"small":{"type":"integer"},` +
		`"big":{"type":"integer"},` +
		`"ratio":{"type":"number"},` +
		`"blob":{"type":"string"},` +
		`"when":{"type":"string"},` +
		`"raw":{},` +
		`"value":{},` +
		`"object":{"type":"object"},` +
		`"verbose":{"type":"boolean"},` +
		`"trace":{"type":"string"}},` +
		`"required":["file_path","cursor","at","marks","data","small","big","ratio","when","trace"],` +
		`"additionalProperties":false}`
	if diff := cmp.Diff(want, s.String()); diff != "" {
		t.Errorf("schema (-want +got):\n%s", diff)
	}
	// What For returns is inside the subset.
	if err := Assert(s.Raw()); err != nil {
		t.Errorf("Assert(For) = %v", err)
	}
}

// TestForAcceptsEncodedValues checks that what json v2 makes of a Go value validates
// against the schema inferred from its type, including nil slices, maps and pointers.
func TestForAcceptsEncodedValues(t *testing.T) {
	s, err := For[inferArgs]()
	if err != nil {
		t.Fatal(err)
	}
	one := 1
	cur := "c"
	obj := jsonv.NewObject(jsonv.Member{Name: "k", Value: "v"})
	for _, v := range []inferArgs{
		{},
		{FilePath: "a", Offset: &one, Cursor: &cur, Tags: []string{"x"}, At: position{Line: 1, Column: 2},
			Marks: []*position{nil, {Line: 3}}, Env: map[string]string{"A": "b"}, Data: map[string]any{"x": []any{1}},
			Small: 255, Big: 1 << 53, Ratio: 0.5, Blob: []byte("hi"), When: time.Unix(0, 0).UTC(),
			Raw: json.RawMessage(`{"z":[1]}`), Value: jsonv.Value{V: []any{true}}, Object: obj,
			Common: Common{Verbose: true, Trace: "t"}},
	} {
		doc, err := jsonv.FromGo(v)
		if err != nil {
			t.Fatal(err)
		}
		if vs := s.Validate(doc, RootArguments); vs != nil {
			text, _ := jsonv.Marshal(doc)
			t.Errorf("Validate(%s) = %q", text, vs)
		}
		var back inferArgs
		if err := jsonv.Decode(doc, &back); err != nil {
			t.Errorf("Decode: %v", err)
		}
	}
	// And what the model sends wrongly is caught before decoding.
	got := s.Validate(parse(t, `{"file_path":1,"cursor":null,"at":{"line":1,"x":0},"marks":[null,{"line":"1"}],"data":null,"small":1,"big":2,"ratio":1,"when":"now","trace":"","offset":null}`), RootArguments)
	want := []string{
		`"file_path" must be a string`,
		`"offset" must be an integer`,
		`"at.x" is not a declared property (additionalProperties: false)`,
		`"marks[1]" must match exactly one oneOf branch (matched 0)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

type recursive struct {
	Next *recursive `json:"next"`
}

type withArray struct {
	Pair [2]int `json:"pair"`
}

type badTag struct {
	X int `json:"x" jsonschema:"minimum=3"`
}

func TestForScalarsAndContainers(t *testing.T) {
	for _, tc := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[string](), `{"type":"string"}`},
		{reflect.TypeFor[int8](), `{"type":"integer"}`},
		{reflect.TypeFor[uint](), `{"type":"integer"}`},
		{reflect.TypeFor[int16](), `{"type":"integer"}`},
		{reflect.TypeFor[uint16](), `{"type":"integer"}`},
		{reflect.TypeFor[int32](), `{"type":"integer"}`},
		{reflect.TypeFor[uint32](), `{"type":"integer"}`},
		{reflect.TypeFor[float64](), `{"type":"number"}`},
		{reflect.TypeFor[bool](), `{"type":"boolean"}`},
		{reflect.TypeFor[any](), `{}`},
		{reflect.TypeFor[*int](), `{"oneOf":[{"type":"null"},{"type":"integer"}]}`},
		{reflect.TypeFor[*any](), `{}`},
		{reflect.TypeFor[*jsonv.Value](), `{}`},
		{reflect.TypeFor[[]int](), `{"type":"array","items":{"type":"integer"}}`},
		{reflect.TypeFor[[][]string](), `{"type":"array","items":{"type":"array","items":{"type":"string"}}}`},
		{reflect.TypeFor[[]byte](), `{"type":"string"}`},
		{reflect.TypeFor[[4]byte](), `{"type":"string"}`},
		{reflect.TypeFor[map[string]int](), `{"type":"object"}`},
		{reflect.TypeFor[map[string]any](), `{"type":"object"}`},
		{reflect.TypeFor[struct{}](), `{"type":"object","additionalProperties":false}`},
		{reflect.TypeFor[*Schema](), `{"oneOf":[{"type":"null"},{"type":"object"}]}`},
	} {
		t.Run(tc.t.String(), func(t *testing.T) {
			s, err := ForType(tc.t)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.String(); got != tc.want {
				t.Errorf("ForType(%v) = %s, want %s", tc.t, got, tc.want)
			}
		})
	}
}

func TestForRejects(t *testing.T) {
	for _, tc := range []struct {
		t    reflect.Type
		want string // a substring of the only violation
	}{
		{reflect.TypeFor[chan int](), "schema cannot be inferred from Go type chan int"},
		{reflect.TypeFor[func()](), "schema cannot be inferred from Go type func()"},
		{reflect.TypeFor[recursive](), "cycle detected"},
		{reflect.TypeFor[map[int]string](), "unsupported map key type"},
		{reflect.TypeFor[complex128](), "schema cannot be inferred"},
		{reflect.TypeFor[badTag](), "must not begin with 'WORD='"},
		{nil, "nil Go type"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := ForType(tc.t)
			var se *Error
			if !errors.As(err, &se) || len(se.Violations) != 1 || !strings.Contains(se.Violations[0], tc.want) {
				t.Errorf("ForType(%v) error = %v, want one violation containing %q", tc.t, err, tc.want)
			}
		})
	}

	// A constraint the subset cannot express is reported with its path, not dropped.
	_, err := For[withArray]()
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("For[withArray] error = %v, want *Error", err)
	}
	want := []string{
		"schema.properties.pair.minItems" + subset,
		"schema.properties.pair.maxItems" + subset,
	}
	if diff := cmp.Diff(want, se.Violations); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

// TestNormalizeKeepsOtherBounds checks that only the exact ranges of Go integer kinds are
// dropped: any other minimum or maximum stays, for Compile to reject.
func TestNormalizeKeepsOtherBounds(t *testing.T) {
	for _, text := range []string{
		`{"type":"integer","minimum":1}`,
		`{"type":"integer","minimum":0,"maximum":10}`,
		`{"type":"integer","maximum":255}`,
		`{"type":"number","minimum":0}`,
		`{"type":["null","integer"],"minimum":-128,"maximum":128}`,
	} {
		_, err := Compile(normalize(parse(t, text), false))
		if err == nil || !strings.Contains(err.Error(), "imum is not a supported keyword") {
			t.Errorf("%s: error %v, want the bound reported", text, err)
		}
	}
	for _, text := range []string{
		`{"type":"integer","minimum":0}`,
		`{"type":"integer","minimum":-2147483648,"maximum":2147483647}`,
		`{"type":["integer","null"],"minimum":0,"maximum":65535}`,
	} {
		if _, err := Compile(normalize(parse(t, text), false)); err != nil {
			t.Errorf("%s: %v", text, err)
		}
	}
}

// TestInferOpen checks Inference.Open: every object inferred from a struct, at any depth
// (fields, slice elements, nullable pointers), is left open, and maps stay as they are.
func TestInferOpen(t *testing.T) {
	type leaf struct {
		N int `json:"n"`
	}
	type root struct {
		Leaf  leaf           `json:"leaf"`
		Many  []leaf         `json:"many"`
		Ptr   *leaf          `json:"ptr"`
		Table map[string]int `json:"table"`
	}
	for _, tc := range []struct {
		open bool
		want string
	}{
		{false, `{"type":"object","properties":{"leaf":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false},"many":{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}},"ptr":{"oneOf":[{"type":"null"},{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}]},"table":{"type":"object"}},"required":["leaf","many","ptr","table"],"additionalProperties":false}`},
		{true, `{"type":"object","properties":{"leaf":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]},"many":{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}},"ptr":{"oneOf":[{"type":"null"},{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}]},"table":{"type":"object"}},"required":["leaf","many","ptr","table"]}`},
	} {
		s, err := ForTypeWith(reflect.TypeFor[root](), Inference{Open: tc.open})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.String(); got != tc.want {
			t.Errorf("open %v:\n got %s\nwant %s", tc.open, got, tc.want)
		}
		value := map[string]any{"leaf": map[string]any{"n": int64(1), "x": true}, "many": []any{}, "ptr": nil, "table": map[string]any{}, "y": "z"}
		v, _ := jsonv.FromGo(value)
		if got := len(s.Validate(v, RootArguments)); (got == 0) != tc.open {
			t.Errorf("open %v: %d violations for undeclared members", tc.open, got)
		}
	}
}
