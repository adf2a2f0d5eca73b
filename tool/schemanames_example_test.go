package tool_test

import (
	"context"
	"fmt"

	"github.com/dsh-go/dsh/jsonv"
	"github.com/dsh-go/dsh/tool"
)

// SchemaNames lists what Schemas would project, without copying any schema: for a caller
// that needs only the names on a hot path (Code Mode builds its bindings from them on every
// run), with the same error when a tool's parameters cannot be projected.
func ExampleRegistry_SchemaNames() {
	reg, _ := tool.NewRegistry(tool.Config{})
	anyJSON := &jsonv.Object{}
	noop := func(ctx context.Context, call *tool.Call) (any, error) { return nil, nil }
	for _, name := range []string{"read", "grep"} {
		if _, err := reg.Register(tool.NewRaw(name, "A tool.", anyJSON, anyJSON, noop)); err != nil {
			panic(err)
		}
	}
	fmt.Println(reg.SchemaNames(nil))
	lossy := tool.NewRaw("lossy", "A tool.", map[string]any{"type": "object", "default": func() {}}, anyJSON, noop)
	if _, err := reg.Register(lossy); err != nil {
		panic(err)
	}
	_, err := reg.SchemaNames(nil)
	fmt.Println(err)
	// Output:
	// [read grep] <nil>
	// tool "lossy" parameters must be lossless JSON before schema projection
}
