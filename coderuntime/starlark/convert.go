package starlark

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"unicode/utf8"

	"github.com/dsh-go/dsh/jsonv"
	star "go.starlark.net/starlark"
)

// maxExactInt is 2^53: every integer of at most this magnitude is exact in a float64.
const maxExactInt = 1 << 53

// errNotJSON is returned for a value that is not lossless JSON.
var errNotJSON = errors.New("not lossless JSON")

// toJSON converts a Starlark value to a jsonv value. The lossless JSON subset is None,
// bools, strings of valid UTF-8, ints whose value a float64 holds exactly, finite floats
// other than -0.0, lists and tuples (arrays), and dicts whose keys are strings (objects, in
// insertion order). Anything else (functions, sets, bytes, ranges, a list that contains
// itself) is rejected with an error naming what failed. Shared references are fine and
// are copied. The walk is iterative, so nesting depth costs heap, not stack.
func toJSON(v star.Value) (any, error) {
	// A frame is a container being converted: its elements (for a dict, its values) and,
	// for a dict, its keys; out collects the converted elements.
	type frame struct {
		src    star.Value // *star.List or *star.Dict, for cycle detection; nil for a tuple
		elems  []star.Value
		names  []string
		out    []any
		next   int
		object bool
	}
	var stack []frame
	active := map[star.Value]bool{}

	// open converts a scalar, or pushes a frame for a container and returns nil.
	open := func(v star.Value) (any, bool, error) {
		switch v := v.(type) {
		case star.NoneType:
			return nil, true, nil
		case star.Bool:
			return bool(v), true, nil
		case star.String:
			if !utf8.ValidString(string(v)) {
				return nil, false, fmt.Errorf("%w: a string is not valid UTF-8", errNotJSON)
			}
			return string(v), true, nil
		case star.Int:
			f, err := intToFloat(v)
			return f, err == nil, err
		case star.Float:
			f := float64(v)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, false, fmt.Errorf("%w: float %v is not finite", errNotJSON, v)
			}
			if f == 0 && math.Signbit(f) {
				return nil, false, fmt.Errorf("%w: float -0.0", errNotJSON)
			}
			return f, true, nil
		case star.Tuple:
			stack = append(stack, frame{elems: v, out: make([]any, len(v))})
			return nil, false, nil
		case *star.List:
			if active[v] {
				return nil, false, fmt.Errorf("%w: a list contains itself", errNotJSON)
			}
			active[v] = true
			elems := make([]star.Value, v.Len())
			for i := range elems {
				elems[i] = v.Index(i)
			}
			stack = append(stack, frame{src: v, elems: elems, out: make([]any, len(elems))})
			return nil, false, nil
		case *star.Dict:
			if active[v] {
				return nil, false, fmt.Errorf("%w: a dict contains itself", errNotJSON)
			}
			active[v] = true
			items := v.Items()
			f := frame{src: v, object: true, elems: make([]star.Value, len(items)), names: make([]string, len(items)), out: make([]any, len(items))}
			for i, kv := range items {
				k, ok := kv[0].(star.String)
				if !ok {
					return nil, false, fmt.Errorf("%w: a dict key of type %s (JSON object keys are strings)", errNotJSON, kv[0].Type())
				}
				if !utf8.ValidString(string(k)) {
					return nil, false, fmt.Errorf("%w: a dict key is not valid UTF-8", errNotJSON)
				}
				f.names[i] = string(k)
				f.elems[i] = kv[1]
			}
			stack = append(stack, f)
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("%w: a value of type %s", errNotJSON, v.Type())
	}
	// close finishes the top frame and returns its value.
	close := func() any {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if f.src != nil {
			delete(active, f.src)
		}
		if !f.object {
			return f.out
		}
		members := make([]jsonv.Member, len(f.out))
		for i := range members {
			members[i] = jsonv.Member{Name: f.names[i], Value: f.out[i]}
		}
		return jsonv.NewObject(members...)
	}

	root, done, err := open(v)
	if err != nil || done {
		return root, err
	}
	for {
		f := &stack[len(stack)-1]
		if f.next == len(f.elems) {
			value := close()
			if len(stack) == 0 {
				return value, nil
			}
			parent := &stack[len(stack)-1]
			parent.out[parent.next-1] = value
			continue
		}
		i := f.next
		f.next++
		value, done, err := open(f.elems[i])
		if err != nil {
			return nil, err
		}
		if done {
			f.out[i] = value
		}
	}
}

// intToFloat returns the float64 that holds the value of i exactly, or an error when no
// float64 does.
func intToFloat(i star.Int) (float64, error) {
	if n, ok := i.Int64(); ok && n >= -maxExactInt && n <= maxExactInt {
		return float64(n), nil
	}
	b := i.BigInt()
	f, acc := new(big.Float).SetInt(b).Float64()
	if acc != big.Exact || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w: int %s has no exact float64 value", errNotJSON, b)
	}
	return f, nil
}

// fromJSON converts a jsonv value to a Starlark value: null → None, numbers → int when
// integral and of magnitude at most 2^53 (so that results index lists and drive range),
// float otherwise, arrays → list, objects → dict in member order. The walk is iterative.
func fromJSON(v any) (star.Value, error) {
	type frame struct {
		elems  []any
		names  []string
		out    []star.Value
		next   int
		object bool
	}
	var stack []frame
	open := func(v any) (star.Value, error) {
		switch v := v.(type) {
		case nil:
			return star.None, nil
		case bool:
			return star.Bool(v), nil
		case string:
			return star.String(v), nil
		case float64:
			if v == math.Trunc(v) && v >= -maxExactInt && v <= maxExactInt {
				return star.MakeInt64(int64(v)), nil
			}
			return star.Float(v), nil
		case []any:
			stack = append(stack, frame{elems: v, out: make([]star.Value, len(v))})
			return nil, nil
		case *jsonv.Object:
			members := v.Members()
			f := frame{object: true, elems: make([]any, len(members)), names: make([]string, len(members)), out: make([]star.Value, len(members))}
			for i, m := range members {
				f.names[i], f.elems[i] = m.Name, m.Value
			}
			stack = append(stack, f)
			return nil, nil
		}
		return nil, fmt.Errorf("%T is not a jsonv value", v)
	}
	close := func() (star.Value, error) {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !f.object {
			return star.NewList(f.out), nil
		}
		d := star.NewDict(len(f.out))
		for i, name := range f.names {
			if err := d.SetKey(star.String(name), f.out[i]); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
	root, err := open(v)
	if err != nil || root != nil {
		return root, err
	}
	for {
		f := &stack[len(stack)-1]
		if f.next == len(f.elems) {
			value, err := close()
			if err != nil {
				return nil, err
			}
			if len(stack) == 0 {
				return value, nil
			}
			parent := &stack[len(stack)-1]
			parent.out[parent.next-1] = value
			continue
		}
		i := f.next
		f.next++
		value, err := open(f.elems[i])
		if err != nil {
			return nil, err
		}
		if value != nil {
			f.out[i] = value
		}
	}
}
