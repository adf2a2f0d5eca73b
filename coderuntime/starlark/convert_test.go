package starlark

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/coderuntime"
	"github.com/dsh-go/dsh/jsonv"
	star "go.starlark.net/starlark"
	"pgregory.net/rapid"
)

// jsonValue generates lossless JSON values: every scalar kind, including integral numbers
// on both sides of 2^53, and nested arrays and objects with arbitrary member names.
func jsonValue() *rapid.Generator[any] {
	scalar := rapid.OneOf(
		rapid.Just[any](nil),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(rapid.String(), func(s string) any { return s }),
		rapid.Map(rapid.Int64Range(-1<<60, 1<<60), func(n int64) any { return float64(n) }),
		rapid.Map(rapid.Float64(), func(f float64) any {
			if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
				return float64(0)
			}
			return f
		}),
		rapid.Map(rapid.SampledFrom([]float64{1e20, -1e300, 5e-324, 9007199254740992, 9007199254740993, 0.1}), func(f float64) any { return f }),
	)
	var value *rapid.Generator[any]
	value = rapid.Deferred(func() *rapid.Generator[any] {
		return rapid.OneOf(scalar, scalar,
			rapid.Map(rapid.SliceOfN(value, 0, 4), func(a []any) any { return a }),
			rapid.Map(rapid.SliceOfN(rapid.String(), 0, 4), func(names []string) any {
				o := &jsonv.Object{}
				for i, n := range names {
					o.Set(n, float64(i))
				}
				return o
			}),
			rapid.Map(rapid.MapOfN(rapid.StringMatching(`[a-z]{0,3}`), value, 0, 4), func(m map[string]any) any {
				v, _ := jsonv.Snapshot(m)
				return v
			}),
		)
	})
	return value
}

func TestConversionRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := jsonValue().Draw(t, "value")
		sv, err := fromJSON(v)
		if err != nil {
			t.Fatalf("fromJSON: %v", err)
		}
		back, err := toJSON(sv)
		if err != nil {
			t.Fatalf("toJSON(%s): %v", sv, err)
		}
		want, _ := jsonv.Marshal(v)
		got, _ := jsonv.Marshal(back)
		if !jsonv.Equal(v, back) || string(got) != string(want) {
			t.Fatalf("round trip: %s → %s", want, got)
		}
	})
}

// TestValuesSurviveTheProgram passes random values through a program: into a binding,
// out of its result, through the program's source text (Starlark's repr is valid Starlark
// syntax), and back as the completion value.
func TestValuesSurviveTheProgram(t *testing.T) {
	rt := newRuntime(t, Config{})
	rapid.Check(t, func(t *rapid.T) {
		v := jsonValue().Draw(t, "value")
		sv, err := fromJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		var seen any
		res, err := rt.Run(context.Background(), coderuntime.Request{
			Program: "x = " + sv.String() + "\nreturn tools.echo(x)",
			Bindings: tools(map[string]coderuntime.Func{"echo": func(_ context.Context, args any) (any, error) {
				seen = args
				return args, nil
			}}),
		})
		if err != nil || res.Error != nil {
			t.Fatalf("Run: %v %v", err, res.Error)
		}
		want, _ := jsonv.Marshal(v)
		for _, got := range []any{seen, res.Value} {
			if b, _ := jsonv.Marshal(got); !jsonv.Equal(v, got) || string(b) != string(want) {
				t.Fatalf("value changed: %s → %s", want, b)
			}
		}
	})
}

func TestToJSONRejects(t *testing.T) {
	cyclic := star.NewList(nil)
	_ = cyclic.Append(cyclic)
	deepCycle := star.NewDict(1)
	_ = deepCycle.SetKey(star.String("a"), star.Tuple{star.NewList([]star.Value{deepCycle})})
	shared := star.NewList([]star.Value{star.MakeInt(1)})
	for _, tt := range []struct {
		v    star.Value
		want string
	}{
		{star.Float(math.NaN()), "float nan is not finite"},
		{star.Float(math.Inf(-1)), "float -inf is not finite"},
		{star.Float(math.Copysign(0, -1)), "float -0.0"},
		{star.MakeInt64(1<<62 + 1), "int 4611686018427387905 has no exact float64 value"},
		{star.String("\xff"), "a string is not valid UTF-8"},
		{cyclic, "a list contains itself"},
		{deepCycle, "a dict contains itself"},
		{star.NewSet(0), "a value of type set"},
		{star.Bytes("x"), "a value of type bytes"},
		{star.NewList([]star.Value{star.None, star.NewBuiltin("f", nil)}), "a value of type builtin_function_or_method"},
	} {
		_, err := toJSON(tt.v)
		if err == nil || err.Error() != "not lossless JSON: "+tt.want {
			t.Errorf("toJSON(%s) = %v, want %q", tt.v, err, tt.want)
		}
	}
	d := star.NewDict(1)
	_ = d.SetKey(star.MakeInt(1), star.None)
	if _, err := toJSON(d); err == nil || !strings.Contains(err.Error(), "a dict key of type int") {
		t.Errorf("toJSON(%s) = %v", d, err)
	}
	v, err := toJSON(star.Tuple{shared, shared, star.NewList([]star.Value{shared})})
	if err != nil || jsonOf(t, v) != "[[1],[1],[[1]]]" {
		t.Errorf("shared references: %v %v", v, err)
	}
}

func TestFromJSONNumbers(t *testing.T) {
	for _, tt := range []struct {
		in   float64
		want string
	}{
		{3, "3"}, {-3, "-3"}, {2.5, "2.5"}, {9007199254740992, "9007199254740992"},
		{9007199254740994, "9.007199254740994e+15"}, {1e20, "1e+20"}, {-0.5, "-0.5"},
	} {
		v, err := fromJSON(tt.in)
		if err != nil || v.String() != tt.want {
			t.Errorf("fromJSON(%v) = %v %v, want %s", tt.in, v, err, tt.want)
		}
	}
	if _, err := fromJSON(make(chan int)); err == nil {
		t.Error("fromJSON accepted a channel")
	}
}
