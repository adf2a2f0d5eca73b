package jsonv

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestObjectMethods(t *testing.T) {
	for _, n := range []int{3, indexThreshold, indexThreshold + 1, 40} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			o := &Object{}
			var want []string
			for i := range n {
				name := fmt.Sprintf("m%d", i)
				o.Set(name, float64(i))
				want = append(want, name)
			}
			if o.Len() != n || !slices.Equal(o.Keys(), want) {
				t.Fatalf("after Set: Len %d keys %q", o.Len(), o.Keys())
			}
			o.Set("m1", "replaced") // keeps its position
			if v, ok := o.Get("m1"); !ok || v != "replaced" || o.Keys()[1] != "m1" {
				t.Errorf("Set existing: Get = %v, %v; keys %q", v, ok, o.Keys())
			}
			if !o.Delete("m0") || o.Delete("m0") || o.Has("m0") {
				t.Error("Delete did not remove m0 exactly once")
			}
			want = want[1:]
			if !slices.Equal(o.Keys(), want) {
				t.Errorf("after Delete: keys %q, want %q", o.Keys(), want)
			}
			for i, name := range want {
				if v, ok := o.Get(name); !ok || (name != "m1" && v != float64(i+1)) {
					t.Errorf("Get(%q) = %v, %v after Delete", name, v, ok)
				}
			}
			if _, ok := o.Get("absent"); ok {
				t.Error("Get(absent) found a member")
			}
			var seen []string
			for name := range o.All() {
				seen = append(seen, name)
				if len(seen) == 2 {
					break
				}
			}
			if !slices.Equal(seen, want[:2]) {
				t.Errorf("All stopped early gave %q", seen)
			}
		})
	}
}

func TestObjectDeleteClearsVacatedSlot(t *testing.T) {
	o := obj("a", 1.0, "b", []any{"big"})
	storage := o.members[:2]
	o.Delete("a")
	if storage[1].Value != nil {
		t.Errorf("deleted slot still references %v", storage[1].Value)
	}
}

func TestNilObject(t *testing.T) {
	var o *Object
	if o.Len() != 0 || o.Has("x") || o.Members() != nil || len(o.Keys()) != 0 {
		t.Error("nil *Object is not empty")
	}
	if _, ok := o.Get("x"); ok {
		t.Error("nil *Object Get found a member")
	}
	for range o.All() {
		t.Error("nil *Object yielded a member")
	}
}

func TestNewObjectIndexesFirstOccurrence(t *testing.T) {
	ms := make([]Member, 0, 20)
	for i := range 20 {
		ms = append(ms, Member{Name: fmt.Sprint(i % 19), Value: float64(i)})
	}
	o := NewObject(ms...)
	if v, _ := o.Get("0"); v != 0.0 {
		t.Errorf("Get on a repeated name = %v, want the first occurrence", v)
	}
}

// TestConcurrentReads runs lookups on one shared snapshot from several goroutines; with
// -race it fails if a lookup writes to the object.
func TestConcurrentReads(t *testing.T) {
	v, err := Snapshot(map[string]any{"list": []any{bigObject(50)}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				list, _ := v.(*Object).Get("list")
				big := list.([]any)[0].(*Object)
				if _, ok := big.Get("kxxx"); !ok {
					t.Error("member missing")
				}
				_, _ = Marshal(v)
				_, _ = Canonical(v)
				_ = Equal(v, v)
				_ = Clone(v)
				_ = Check(v)
			}
		})
	}
	wg.Wait()
}
