// Package tool is the heart of dsh: tool definitions, the scoped registry and the execution
// pipeline every tool call passes through (SPEC §1–§4).
//
// A model's tool call becomes an Input; Registry.Execute turns it into exactly one Result:
//
//	create execution (snapshot arguments, collapse check)
//	→ pre-execute hooks (allow | deny | ask) → approval → guards
//	→ around-execute wrappers → the body (arguments validated, output validated and rendered)
//	→ post-execute hooks (accept | replace content | replace value | block)
//	→ cancellation check → finalize content → result listeners (observe only)
//
// Failures are results, never panics: a body that panics, a hook that fails or an invalid
// output each end in a failure result with the codes of SPEC §1.10. The staged view
// (Registry.Prepare, Invocation.Dispatch, Invocation.Finalize) lets a scheduler overlap only
// the dispatch of concurrency-safe calls while committing everything else in model order.
//
// Scopes (one per agent, with a parent chain) layer tools over the global set: a scope's own
// tools shadow inherited ones, Restrict masks inherited tools, Guard adds monotonic vetoes, and
// PresentAs selects native, code or both presentation. The name run_code is reserved for the
// Code Mode transport in every mode.
package tool
