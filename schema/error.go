package schema

import "strings"

// Error identity of a schema outside the supported subset (docs/behaviour.md §5.2).
const (
	errorName = "JsonSchemaError"
	errorCode = "UNSUPPORTED_SCHEMA"
)

// Error reports a raw schema outside the supported subset, or a Go type whose inferred
// schema cannot be expressed in it. Every violation is collected, in walk order, so an
// author sees all problems at once. Error implements the tool.Coded interface: its class
// name is "JsonSchemaError" and its code "UNSUPPORTED_SCHEMA".
type Error struct {
	// Violations are the path-qualified problems, for example
	// `schema.properties.a.type must be one of object/array/string/number/integer/boolean/null`.
	Violations []string
}

// Error returns "unsupported JSON schema: " followed by the violations joined by "; ".
func (e *Error) Error() string {
	return "unsupported JSON schema: " + strings.Join(e.Violations, "; ")
}

// ErrorName returns "JsonSchemaError", the error class the model and the log see.
func (e *Error) ErrorName() string { return errorName }

// ErrorCode returns "UNSUPPORTED_SCHEMA", the stable code of the failure.
func (e *Error) ErrorCode() string { return errorCode }
