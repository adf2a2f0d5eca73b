// Package schema is dsh's supported JSON Schema subset: the contract between a tool and
// the model for arguments, and between a tool and the pipeline for output values
// (docs/behaviour.md §2.1–§2.4).
//
// # The subset
//
// A schema is a JSON object (a *jsonv.Object tree) using only the constraint keywords
// type, oneOf, properties, required, additionalProperties, items, enum and const, and the
// annotations description, title, default and examples. A node has one type (object,
// array, string, number, integer, boolean or null), or a oneOf of at least two branches of
// which exactly one must match, or neither, in which case it accepts any lossless JSON
// value. properties, required and a boolean additionalProperties belong to objects; items
// to arrays; a type-correct enum and const to scalars. Everything else — anyOf, $ref,
// pattern, minimum, type arrays, misplaced keywords — is rejected by Assert and Compile
// with an *Error (code UNSUPPORTED_SCHEMA) that lists every violation with its path, so
// no constraint is ever accepted and then ignored.
//
// Objects are open unless additionalProperties is false. Defaults are annotations only:
// validation never fills in a default, and an absent optional property stays absent.
//
// # Validation
//
// Schema.Validate returns model-visible sentences such as
//
//	missing required property "file_path"
//	"a.b[2]" must be a number
//	"value" must match exactly one oneOf branch (matched 2)
//	"arguments" must be an object
//
// in walk order: inside an object, missing required properties first, then the declared
// properties in declaration order, then undeclared ones. The root label is RootValue
// ("value") for tool outputs and RootArguments (empty, displayed as "arguments") for
// arguments. Validation, Assert and Compile are iterative, so schemas and values nested
// thousands of levels deep need no call stack.
//
// # Inference from Go types
//
// For and ForType infer a schema with github.com/google/jsonschema-go from json and
// jsonschema struct tags, then map it onto the subset:
//
//   - bool is boolean; integer kinds are integer; float kinds are number; string,
//     time.Time and the other standard types that marshal as strings are string.
//     The ranges jsonschema-go puts on sized and unsigned integers (minimum, maximum) are
//     dropped: the subset cannot express them and the Go decoder rejects out-of-range
//     numbers by itself.
//   - A struct is a closed object (additionalProperties false; open with ForTypeWith and
//     Inference.Open, as tool.New infers arguments) whose properties follow
//     the field order, including fields promoted from embedded structs. Fields without
//     omitempty or omitzero are required; `json:"-"` and unexported fields are left out;
//     a jsonschema tag becomes the property's description.
//   - A slice is an array of its element schema. jsonschema-go allows null for a slice;
//     dsh does not, because it treats a nil slice as an empty array (json v2 encodes it as
//     []). []byte (and [N]byte) is a string, its base64 encoding.
//   - A pointer field with omitempty or omitzero has the schema of its element: a nil
//     pointer is omitted, never sent as null. Any other pointer (a required field, a slice
//     element, the root) is oneOf [{"type":"null"}, element], since nil encodes as null.
//   - map[string]T is an open object, {"type":"object"}: the subset cannot constrain the
//     values of undeclared properties, so they are checked only when decoded into T.
//   - An interface is {} (any lossless JSON value), and so are jsonv.Value,
//     json.RawMessage and jsontext.Value; a jsonv.Object, a jsonschema.Schema and a Schema
//     are {"type":"object"}. Other types with their own JSON encoding are described by
//     their Go structure, which may not match: give such tools an explicit schema.
//   - A fixed-size array (other than of bytes) carries minItems and maxItems and is
//     rejected, as is any other keyword outside the subset. Recursive types, channels,
//     functions, complex numbers and maps with non-string keys cannot be inferred.
//
// $schema and $id are dropped. Every inferred schema is checked with Compile, so what For
// returns is always inside the subset.
package schema
