package jsonv

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"pgregory.net/rapid"
)

// genSlabValue draws values that exercise the slab layout: the usual values, and objects
// large enough to carry a name index, side by side with small containers.
func genSlabValue() *rapid.Generator[any] {
	big := rapid.Custom(func(t *rapid.T) any {
		n := rapid.IntRange(indexThreshold+1, indexThreshold+6).Draw(t, "members")
		o := &Object{}
		for i := range n {
			o.Set(fmt.Sprintf("m%d", i), genValue(2).Draw(t, "value"))
		}
		return []any{o, genValue(2).Draw(t, "neighbour")}
	})
	return rapid.OneOf(genValue(4), big)
}

// naiveParse is the straightforward parser: one allocation per container, string and
// number, as Parse built values before it used slabs. It reads valid JSON only.
func naiveParse(t *rapid.T, data []byte) any {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	var read func() any
	read = func() any {
		tok, err := dec.ReadToken()
		if err != nil {
			t.Fatalf("naiveParse: %v", err)
		}
		switch tok.Kind() {
		case 'n':
			return nil
		case 't', 'f':
			return tok.Bool()
		case '"':
			return tok.String()
		case '0':
			f, err := tok.Float()
			if err != nil {
				t.Fatalf("naiveParse: %v", err)
			}
			return f
		case '[':
			arr := []any{}
			for dec.PeekKind() != ']' {
				arr = append(arr, read())
			}
			dec.ReadToken()
			return arr
		case '{':
			o := &Object{}
			for dec.PeekKind() != '}' {
				name := read().(string)
				o.Set(name, read())
			}
			dec.ReadToken()
			return o
		}
		t.Fatalf("naiveParse: unexpected token %v", tok)
		return nil
	}
	return read()
}

// containers lists the arrays and objects of v, depth first in member order.
func containers(v any) []any {
	var out []any
	work := []any{v}
	for len(work) > 0 {
		x := work[len(work)-1]
		work = work[:len(work)-1]
		var children []any
		switch x := x.(type) {
		case []any:
			children = x
		case *Object:
			for _, m := range x.Members() {
				children = append(children, m.Value)
			}
		default:
			continue
		}
		out = append(out, x)
		for i := len(children) - 1; i >= 0; i-- {
			work = append(work, children[i])
		}
	}
	return out
}

// slabBuilders are the ways to a slab-built value from a drawn one. Each also returns a
// check to run at the end of the test: the arena builders put the value between two
// neighbours built in the same arena, and their check fails if a neighbour changed.
var slabBuilders = []struct {
	name  string
	build func(t *rapid.T, v any) (any, func())
}{
	{"Parse", func(t *rapid.T, v any) (any, func()) { return parseFunc(t, Parse, v), func() {} }},
	{"Snapshot", func(t *rapid.T, v any) (any, func()) { return snapshotFunc(t, Snapshot, v), func() {} }},
	{"ArenaParse", func(t *rapid.T, v any) (any, func()) {
		var a Arena
		return between(t, func(v any) any { return parseFunc(t, a.Parse, v) }, v)
	}},
	{"ArenaSnapshot", func(t *rapid.T, v any) (any, func()) {
		var a Arena
		return between(t, func(v any) any { return snapshotFunc(t, a.Snapshot, v) }, v)
	}},
}

func parseFunc(t *rapid.T, parse func([]byte) (any, error), v any) any {
	data := mustMarshal(t, v)
	p, err := parse(data)
	if err != nil {
		t.Fatalf("Parse(%s): %v", data, err)
	}
	return p
}

func snapshotFunc(t *rapid.T, snapshot func(any) (any, error), v any) any {
	s, err := snapshot(v)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return s
}

// between builds v with build between two neighbours drawn and built the same way, and
// returns it with a check that the neighbours are unchanged.
func between(t *rapid.T, build func(any) any, v any) (any, func()) {
	var neighbours []any
	var want [][]byte
	add := func() {
		n := genValue(3).Draw(t, "neighbour")
		want = append(want, mustMarshal(t, n))
		neighbours = append(neighbours, build(n))
	}
	add()
	out := build(v)
	add()
	return out, func() {
		for i, n := range neighbours {
			if got := mustMarshal(t, n); !bytes.Equal(got, want[i]) {
				t.Fatalf("a neighbour in the arena changed:\n%s\n%s", want[i], got)
			}
		}
	}
}

func TestPropSlabBuiltEqualsNaive(t *testing.T) {
	for _, b := range slabBuilders {
		t.Run(b.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				v := genSlabValue().Draw(t, "v")
				want, _ := Marshal(v)
				got, check := b.build(t, v)
				defer check()
				naive := naiveParse(t, want)
				if !Equal(got, naive) || !Equal(got, v) {
					t.Fatalf("%s built a value not Equal to the naive one for %s", b.name, want)
				}
				if out, _ := Marshal(got); !bytes.Equal(out, want) {
					t.Fatalf("%s changed the value or its member order:\n%s\n%s", b.name, want, out)
				}
				if err := Check(got); err != nil {
					t.Fatalf("Check(%s result): %v", b.name, err)
				}
			})
		})
	}
}

// TestPropSlabMutationIsolated mutates the containers of a slab-built value (setting,
// adding and deleting members, writing and appending elements) and the same containers of
// an independent naive copy alike: if any mutation wrote into a neighbour's slab storage,
// the two would differ.
func TestPropSlabMutationIsolated(t *testing.T) {
	for _, b := range slabBuilders {
		t.Run(b.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				v := genSlabValue().Draw(t, "v")
				data, _ := Marshal(v)
				got, check := b.build(t, v)
				defer check()
				naive := naiveParse(t, data)
				gc, nc := containers(got), containers(naive)
				if len(gc) != len(nc) {
					t.Fatalf("%d containers, naive copy has %d", len(gc), len(nc))
				}
				if len(gc) == 0 {
					return
				}
				ops := rapid.IntRange(1, 8).Draw(t, "ops")
				for range ops {
					k := rapid.IntRange(0, len(gc)-1).Draw(t, "container")
					x := genValue(1).Draw(t, "x")
					switch g := gc[k].(type) {
					case *Object:
						n := nc[k].(*Object)
						switch op := rapid.IntRange(0, 2).Draw(t, "op"); {
						case op == 0 && g.Len() > 0: // replace a member in place
							name := g.Members()[rapid.IntRange(0, g.Len()-1).Draw(t, "member")].Name
							g.Set(name, x)
							n.Set(name, Clone(x))
						case op == 1 && g.Len() > 0:
							name := g.Members()[rapid.IntRange(0, g.Len()-1).Draw(t, "member")].Name
							g.Delete(name)
							n.Delete(name)
						default: // grow the object
							name := "new " + strings.Repeat("+", g.Len())
							g.Set(name, x)
							n.Set(name, Clone(x))
						}
					case []any:
						n := nc[k].([]any)
						if len(g) > 0 && rapid.Bool().Draw(t, "write") {
							i := rapid.IntRange(0, len(g)-1).Draw(t, "element")
							g[i], n[i] = x, Clone(x)
						} else {
							// The grown array is dropped: appending must copy out, never
							// write past the array's end into a neighbour.
							_ = append(g, x)
						}
					}
				}
				if !Equal(got, naive) {
					g, _ := Marshal(got)
					n, _ := Marshal(naive)
					t.Fatalf("mutating %s's containers changed another value:\n%s\n%s", b.name, g, n)
				}
				if g, _ := Marshal(got); !bytes.Equal(g, mustMarshal(t, naive)) {
					t.Fatalf("member order differs after mutation:\n%s\n%s", g, mustMarshal(t, naive))
				}
			})
		})
	}
}

func mustMarshal(t *rapid.T, v any) []byte {
	out, err := Marshal(v)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return out
}

// TestSlabAllocationsDoNotGrowWithContainers pins what the slabs are for: the number of
// allocations of Parse and Snapshot does not depend on how many objects and members a
// value has (only strings, numbers and arrays are boxed one by one).
func TestSlabAllocationsDoNotGrowWithContainers(t *testing.T) {
	wide := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"list":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"k%d":{"t":true,"f":false,"z":null}}`, i)
		}
		b.WriteString(`]}`)
		return b.String()
	}
	for _, tc := range []struct {
		name string
		run  func(doc string) func()
	}{
		{"Parse", func(doc string) func() {
			data := []byte(doc)
			return func() {
				if _, err := Parse(data); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"Snapshot", func(doc string) func() {
			v, err := ParseString(doc)
			if err != nil {
				t.Fatal(err)
			}
			return func() {
				if _, err := Snapshot(v); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Up to 5 elements of 2 objects each, everything fits the parser's fixed scratch
			// buffers, so the count would grow only with per-node allocations.
			small := testing.AllocsPerRun(20, tc.run(wide(1)))
			large := testing.AllocsPerRun(20, tc.run(wide(5)))
			if large != small {
				t.Errorf("%s allocates %v times for 3 objects and %v times for 11: want the same", tc.name, small, large)
			}
		})
	}
}

// TestParseRejectsInputOver4GiB checks the one limit the packed slots put on Parse, without
// allocating 4 GiB: parseValue is told the input's size.
func TestParseRejectsInputOver4GiB(t *testing.T) {
	dec := jsontext.NewDecoder(strings.NewReader(`{"a":1}`))
	_, err := parseValue(dec, maxParseInput+1, nil)
	want := "jsonv: input of 4294967296 bytes is larger than the 4 GiB Parse accepts"
	if err == nil || err.Error() != want {
		t.Fatalf("parseValue of a 4 GiB + 1 input: error %v, want %q", err, want)
	}
}
