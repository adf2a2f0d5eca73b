package jsonv

import (
	jsonv1 "encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/google/go-cmp/cmp"
)

type envelope struct {
	Name string  `json:"name"`
	Args *Object `json:"args"`
	Data Value   `json:"data"`
	Any  any     `json:"any,omitempty"`
}

const envelopeJSON = `{"name":"t","args":{"z":1,"a":[{"y":true,"x":null}]},"data":{"b":"1","a":2}}`

func TestStructRoundTrip(t *testing.T) {
	codecs := []struct {
		name      string
		marshal   func(any) ([]byte, error)
		unmarshal func([]byte, any) error
	}{
		{"json v2", func(v any) ([]byte, error) { return json.Marshal(v) }, func(b []byte, v any) error { return json.Unmarshal(b, v) }},
		{"encoding/json", jsonv1.Marshal, jsonv1.Unmarshal},
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			var e envelope
			if err := c.unmarshal([]byte(envelopeJSON), &e); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			if got, want := e.Args.Keys(), []string{"z", "a"}; !cmp.Equal(got, want) {
				t.Errorf("args keys = %q, want %q", got, want)
			}
			data, ok := e.Data.V.(*Object)
			if !ok || !cmp.Equal(data.Keys(), []string{"b", "a"}) {
				t.Errorf("data = %#v, want an ordered object", e.Data.V)
			}
			out, err := c.marshal(e)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if string(out) != envelopeJSON {
				t.Errorf("round trip\n got %s\nwant %s", out, envelopeJSON)
			}
		})
	}
}

func TestStructDecodingIsStrict(t *testing.T) {
	for _, in := range []string{
		`{"name":"t","args":{"a":1,"a":2},"data":null}`,
		`{"name":"t","args":{"a":-0},"data":null}`,
		`{"name":"t","args":{},"data":[1e999]}`,
		`{"name":"t","args":[],"data":null}`,
	} {
		var e envelope
		if err := json.Unmarshal([]byte(in), &e); err == nil {
			t.Errorf("json v2 Unmarshal(%s) succeeded, want an error", in)
		}
		if err := jsonv1.Unmarshal([]byte(in), &e); err == nil {
			t.Errorf("encoding/json Unmarshal(%s) succeeded, want an error", in)
		}
	}
	var o Object
	if err := o.UnmarshalJSON([]byte(`"x"`)); err == nil || err.Error() != "jsonv: cannot decode a JSON string into a jsonv.Object" {
		t.Errorf("UnmarshalJSON(string) error = %v", err)
	}
}

func TestValueMarshalRejectsInvalid(t *testing.T) {
	if _, err := json.Marshal(Value{V: math.NaN()}); err == nil {
		t.Error("json v2 marshalled a NaN Value")
	}
	if _, err := jsonv1.Marshal(Value{V: 1}); err == nil {
		t.Error("encoding/json marshalled a Value holding an int")
	}
	if out, err := json.Marshal(Value{}); err != nil || string(out) != "null" {
		t.Errorf("Marshal(Value{}) = %s, %v", out, err)
	}
}

func TestAnyFieldHoldingObject(t *testing.T) {
	e := envelope{Args: obj("b", 1.0, "a", 2.0), Any: []any{obj("y", 1.0, "x", 2.0)}}
	out, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"any":[{"y":1,"x":2}]`) || !strings.Contains(string(out), `"args":{"b":1,"a":2}`) {
		t.Errorf("member order lost: %s", out)
	}
}

func TestFromGo(t *testing.T) {
	type inner struct {
		B []string `json:"b"`
	}
	type outer struct {
		Z     int            `json:"z"`
		A     inner          `json:"a"`
		M     map[string]int `json:"m"`
		Skip  string         `json:"-"`
		Empty []int          `json:"empty"`
	}
	got, err := FromGo(outer{Z: 1, A: inner{B: []string{"x"}}, M: map[string]int{"q": 1, "p": 2}})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := Marshal(got)
	if want := `{"z":1,"a":{"b":["x"]},"m":{"p":2,"q":1},"empty":[]}`; string(out) != want {
		t.Errorf("FromGo = %s, want %s", out, want)
	}

	for _, bad := range []any{math.Copysign(0, -1), math.Inf(1), make(chan int), "\xff"} {
		if v, err := FromGo(bad); err == nil {
			t.Errorf("FromGo(%#v) = %v, want an error", bad, v)
		}
	}
}

func TestDecode(t *testing.T) {
	type args struct {
		Path  string   `json:"path"`
		Lines []int    `json:"lines"`
		Opt   *float64 `json:"opt"`
	}
	v, err := ParseString(`{"lines":[1,2],"path":"/tmp","extra":true}`)
	if err != nil {
		t.Fatal(err)
	}
	var got args
	if err := Decode(v, &got); err != nil {
		t.Fatal(err)
	}
	if want := (args{Path: "/tmp", Lines: []int{1, 2}}); !cmp.Equal(got, want) {
		t.Errorf("Decode = %+v, want %+v", got, want)
	}
	if err := Decode(obj("path", 1.0), &got); err == nil {
		t.Error("Decode of a number into a string field succeeded")
	}
	if err := Decode(obj("path", 1), &got); err == nil {
		t.Error("Decode of a non-jsonv value succeeded")
	}
}
