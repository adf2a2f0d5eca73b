package schema_test

import (
	"fmt"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/schema"
)

func ExampleCompile() {
	raw, _ := jsonv.ParseString(`{
		"type": "object",
		"properties": {
			"file_path": {"type": "string", "description": "the file to read"},
			"limit": {"type": "integer"}
		},
		"required": ["file_path"]
	}`)
	s, err := schema.Compile(raw)
	if err != nil {
		fmt.Println(err)
		return
	}
	args, _ := jsonv.ParseString(`{"limit": 1.5}`)
	for _, v := range s.Validate(args, schema.RootArguments) {
		fmt.Println(v)
	}
	// Output:
	// missing required property "file_path"
	// "limit" must be an integer
}

func ExampleSchema_Validate() {
	s := schema.MustCompile(jsonv.NewObject(
		jsonv.Member{Name: "type", Value: "array"},
		jsonv.Member{Name: "items", Value: jsonv.NewObject(
			jsonv.Member{Name: "type", Value: "string"},
			jsonv.Member{Name: "enum", Value: []any{"red", "green"}},
		)},
	))
	value, _ := jsonv.ParseString(`["red", "blue", 3]`)
	for _, v := range s.Validate(value, schema.RootValue) {
		fmt.Println(v)
	}
	// Output:
	// "value[1]" must be one of ["red","green"]
	// "value[2]" must be a string
}

func ExampleAssert() {
	raw, _ := jsonv.ParseString(`{"type": ["string", "null"], "minLength": 1}`)
	err := schema.Assert(raw)
	fmt.Println(err)
	// Output:
	// unsupported JSON schema: schema.minLength is not a supported keyword (subset: type/oneOf/properties/required/additionalProperties/items/enum/const + annotations); schema.type must be a single type string (type arrays are not supported)
}

func ExampleFor() {
	type ReadArgs struct {
		FilePath string `json:"file_path" jsonschema:"the file to read"`
		Offset   *int   `json:"offset,omitempty"`
		Tags     []string
	}
	s, err := schema.For[ReadArgs]()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s)
	// Output:
	// {"type":"object","properties":{"file_path":{"type":"string","description":"the file to read"},"offset":{"type":"integer"},"Tags":{"type":"array","items":{"type":"string"}}},"required":["file_path","Tags"],"additionalProperties":false}
}

func ExampleSchema_Valid() {
	s := schema.MustCompile(map[string]any{
		"oneOf": []any{
			map[string]any{"type": "number"},
			map[string]any{"type": "integer"},
		},
	})
	fmt.Println(s.Valid(1.5), s.Valid(2.0))
	// Output:
	// true false
}
