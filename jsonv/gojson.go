package jsonv

import (
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// FromGo converts an arbitrary Go value (a struct, a typed map or slice…) into a jsonv value
// by encoding it with json v2 (deterministic member order for maps) and parsing the result
// strictly. Struct fields keep their declaration order. It fails for values json v2 cannot
// encode and for values that are not lossless, such as a float field holding -0 or NaN.
func FromGo(v any) (any, error) {
	data, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		return nil, fmt.Errorf("jsonv: encoding Go value of type %T: %w", v, err)
	}
	out, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("jsonv: converting Go value of type %T: %w", v, err)
	}
	return out, nil
}

// Decode decodes a jsonv value into the Go value dst points to, with json v2 semantics
// (case-sensitive member names, unknown members ignored). It is how a tool body receives
// typed arguments from a snapshot.
func Decode(v any, dst any) error {
	data, err := Marshal(v)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, dst); err != nil {
		return fmt.Errorf("jsonv: decoding into %T: %w", dst, err)
	}
	return nil
}

// MarshalJSON encodes the object like Marshal, for encoding/json and other v1-style callers.
func (o *Object) MarshalJSON() ([]byte, error) { return Marshal(o) }

// MarshalJSONTo encodes the object like Marshal, so that json v2 keeps its member order.
func (o *Object) MarshalJSONTo(enc *jsontext.Encoder) error {
	data, err := Marshal(o)
	if err != nil {
		return err
	}
	return enc.WriteValue(data)
}

// UnmarshalJSON replaces o with the object in data, parsed strictly as by Parse.
func (o *Object) UnmarshalJSON(data []byte) error {
	v, err := Parse(data)
	if err != nil {
		return err
	}
	obj, ok := v.(*Object)
	if !ok {
		return fmt.Errorf("jsonv: cannot decode a JSON %s into a jsonv.Object", KindOf(v))
	}
	*o = *obj
	return nil
}

// UnmarshalJSONFrom reads the next value from dec into o, parsed strictly as by Parse.
func (o *Object) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	data, err := dec.ReadValue()
	if err != nil {
		return err
	}
	return o.UnmarshalJSON(data)
}

// Value wraps any jsonv value so that it can sit in a struct field and be encoded and
// decoded by json v2 or encoding/json losslessly. A plain `any` field would decode objects
// into map[string]any and lose member order and strictness; a Value field decodes with
// Parse and encodes with Marshal.
type Value struct {
	V any
}

// MarshalJSON encodes v.V like Marshal.
func (v Value) MarshalJSON() ([]byte, error) { return Marshal(v.V) }

// MarshalJSONTo encodes v.V like Marshal.
func (v Value) MarshalJSONTo(enc *jsontext.Encoder) error {
	data, err := Marshal(v.V)
	if err != nil {
		return err
	}
	return enc.WriteValue(data)
}

// UnmarshalJSON sets v.V to the value in data, parsed strictly as by Parse.
func (v *Value) UnmarshalJSON(data []byte) error {
	x, err := Parse(data)
	if err != nil {
		return err
	}
	v.V = x
	return nil
}

// UnmarshalJSONFrom reads the next value from dec into v.V, parsed strictly as by Parse.
func (v *Value) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	data, err := dec.ReadValue()
	if err != nil {
		return err
	}
	return v.UnmarshalJSON(data)
}
