package jsonv_test

import (
	"fmt"

	"github.com/dsh-go/dsh/jsonv"
)

func ExampleParse() {
	v, err := jsonv.ParseString(`{"path":"/tmp/x","lines":[1,2],"force":true}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	args := v.(*jsonv.Object)
	fmt.Println(args.Keys())
	lines, _ := args.Get("lines")
	fmt.Println(jsonv.KindOf(lines), lines)

	_, err = jsonv.ParseString(`{"a":-0}`)
	fmt.Println(err)
	_, err = jsonv.ParseString(`{"a":1,"a":2}`)
	fmt.Println(err)
	// Output:
	// [path lines force]
	// array [1 2]
	// jsonv: number -0 at offset 5 is negative zero, which is not lossless JSON
	// jsonv: invalid JSON: duplicate member name "a" in the object at $
}

func ExampleMarshalIndent() {
	v, _ := jsonv.ParseString(`{"z":1e21,"a":[0.1,{}],"s":"tab\there"}`)
	out, _ := jsonv.MarshalIndent(v, "  ")
	fmt.Println(string(out))
	// Output:
	// {
	//   "z": 1e+21,
	//   "a": [
	//     0.1,
	//     {}
	//   ],
	//   "s": "tab\there"
	// }
}

func ExampleCanonical() {
	v, _ := jsonv.ParseString(`{"b":[{"y":1,"x":2}],"a":null,"10":0,"9":0}`)
	out, _ := jsonv.Canonical(v)
	fmt.Println(string(out))
	// Output:
	// {"9":0,"10":0,"a":null,"b":[{"x":2,"y":1}]}
}

func ExampleSnapshot() {
	input := map[string]any{"name": "x", "ids": []int{1, 2}}
	snap, err := jsonv.Snapshot(input)
	if err != nil {
		fmt.Println(err)
		return
	}
	input["ids"].([]int)[0] = 99 // the snapshot does not see later changes
	out, _ := jsonv.Marshal(snap)
	fmt.Println(string(out))

	_, err = jsonv.Snapshot(map[string]any{"when": struct{}{}})
	fmt.Println(err)
	// Output:
	// {"ids":[1,2],"name":"x"}
	// jsonv: value of Go type struct {} at $.when is not lossless JSON
}

func ExampleDecode() {
	v, _ := jsonv.ParseString(`{"path":"/tmp/x","limit":10}`)
	var args struct {
		Path  string `json:"path"`
		Limit int    `json:"limit"`
	}
	if err := jsonv.Decode(v, &args); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%+v\n", args)
	// Output:
	// {Path:/tmp/x Limit:10}
}

func ExampleValue() {
	type event struct {
		Kind string      `json:"kind"`
		Data jsonv.Value `json:"data"`
	}
	var e event
	v, _ := jsonv.ParseString(`{"kind":"k","data":{"z":1,"a":2}}`)
	if err := jsonv.Decode(v, &e); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.Data.V.(*jsonv.Object).Keys())
	// Output:
	// [z a]
}

func ExampleAppendCanonical() {
	v, err := jsonv.ParseString(`{"b":[2,1],"a":{"y":1,"x":2}}`)
	if err != nil {
		panic(err)
	}
	buf := make([]byte, 0, 64)
	buf, err = jsonv.AppendCanonical(buf[:0], v)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(buf))
	// Output: {"a":{"x":2,"y":1},"b":[2,1]}
}

// NewObjectCopy builds an object from members assembled in a buffer of the caller's own,
// which the object does not keep.
func ExampleNewObjectCopy() {
	var buf [2]jsonv.Member
	ms := append(buf[:0], jsonv.Member{Name: "text", Value: "hello"}, jsonv.Member{Name: "n", Value: 2.0})
	o := jsonv.NewObjectCopy(ms)
	buf[0].Value = "reused"
	b, _ := jsonv.Marshal(o)
	fmt.Println(string(b))
	// Output: {"text":"hello","n":2}
}

// An Arena lays out the values of many calls one after the other, as a log does with the
// payloads of its events; each value is what Parse or Snapshot alone would return.
func ExampleArena() {
	var arena jsonv.Arena
	var events []any
	for _, line := range []string{`{"type":"text","text":"hi"}`, `{"type":"text","text":"there"}`} {
		v, err := arena.Parse([]byte(line))
		if err != nil {
			fmt.Println(err)
			return
		}
		events = append(events, v)
	}
	copied, err := arena.Snapshot(map[string]any{"type": "text", "text": "!"})
	if err != nil {
		fmt.Println(err)
		return
	}
	events = append(events, copied)
	for _, e := range events {
		text, _ := e.(*jsonv.Object).Get("text")
		fmt.Println(text)
	}
	// Output:
	// hi
	// there
	// !
}
