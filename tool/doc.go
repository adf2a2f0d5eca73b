// Package tool is the heart of dsh: tool definitions, the scoped registry and the execution
// pipeline every tool call passes through (docs/behaviour.md §1–§4).
//
// A model's tool call becomes an Input; Registry.Execute turns it into exactly one Result:
//
//	create execution (snapshot arguments, argument limits, collapse check)
//	→ pre-execute hooks (allow | deny | ask) → approval → guards
//	→ around-execute wrappers → the body (arguments validated, output validated and rendered)
//	→ post-execute hooks (accept | replace content | replace value | block)
//	→ cancellation check → finalize content → result listeners (observe only)
//
// Failures are results, never panics: a hook that fails or an invalid output each end in a
// failure result with a stable code. Arguments over Config.MaxArgBytes (1 MiB by default) or
// with a NUL byte in a path argument (file_path, path, workdir, cwd, …) fail INVALID_ARGS
// before any hook sees them. A panic or a runtime.Goexit in a body, a pre- or post-execute
// hook, the approver, a guard, a wrapper or finalize-content ends the call in a TOOL_PANIC
// failure naming where it happened: that code runs on a goroutine of the call's own (one for
// all of a call's steps, and one more for a body under around-execute wrappers), so Goexit
// ends only that goroutine, the call goes on with its next step on a new one, and the caller
// always gets its result. A result listener's panic or
// Goexit is logged and changes nothing. The staged view
// (Registry.Prepare, Invocation.Dispatch, Invocation.Finalize) lets a scheduler overlap only
// the dispatch of concurrency-safe calls while committing everything else in model order.
//
// Scopes (one per agent, with a parent chain) layer tools over the global set: a scope's own
// tools shadow inherited ones, Restrict masks inherited tools, Guard adds monotonic vetoes, and
// PresentAs selects native, code or both presentation. The name run_code is reserved for the
// Code Mode transport in every mode.
package tool
