// Package codemode is dsh's Code Mode (docs/behaviour.md §10): the run_code tool's program runner and the
// SDK a model programs against.
//
// # Running programs
//
// Install sets a Runner as the registry's tool.CodeRunner, so that the run_code transport
// (defined by package tool) runs programs with a coderuntime.Runtime. For one run_code call
// the Runner binds one function per tool visible to the calling agent (restrictions,
// shadows and scoped tools apply; run_code itself is never bound) in a namespace `tools`
// whose failures raise ToolCallError, runs the program, and returns {logs, result?}. A
// failed run is a CODE_RUN_FAILED error: "code run failed (<kind>): <message>" followed by
// the captured output.
//
// Every tool call a program makes is a full pipeline call of its own (pre-execute, guards,
// approval, wrappers, post-execute, finalize-content, result listeners), with the id
// "<run_code call id>:code:<n>", the outer call's root id and agent, and the outer call's
// token as parent, so Code Mode's collapse never applies to it. The calls of one run go
// through a per-run scheduler with the native loop's contract (docs/behaviour.md §10.6):
//
//   - calls start strictly in submission order, one pre-execute stage at a time.
//     Submission order is the program's call order: a runtime that numbers its binding
//     calls (coderuntime.CallSeq, as the QuickJS and Starlark backends do) has each call
//     queued, and numbered <n>, only after every call the program made before it was
//     queued or rejected, even when it invokes the bindings concurrently; for a runtime
//     that does not number them it is the order in which the bindings are invoked;
//   - concurrency-safe calls overlap, at most Config.MaxParallelSubCalls at once; an
//     exclusive call waits for the pool to drain, runs alone and holds its barrier until
//     its post-execute stage is done;
//   - results commit in submission order: contexts a sub-call deferred (and the content
//     of a successful sub-call that holds an image) are deferred to the run_code call, a
//     sub-call that concludes the turn concludes it, and the program's call resolves with
//     the final value or rejects with the failure's message;
//   - when the run settles, queued calls are abandoned, the calls in flight are cancelled
//     (their context's cause is "run_code settled"), and RunCode returns only after every
//     started call committed and every dispatch event was recorded.
//
// For a call made for an agent, Config.Log receives a tool/code-dispatch-start event before
// each sub-call's pre-execute stage and a tool/code-dispatch event after its commit, with
// the content Config.ShapeLog leaves. Both kinds are recorded in submission order, and a
// settle event always precedes the start event of a sub-call started after that commit, so
// the log's order does not depend on timing beyond the lane's own: a program that awaits
// each call logs start, settle, start, settle. The program gets its outcome before the
// settle event is written; only the start of a later sub-call waits for it.
//
// # The SDK
//
// RenderTypeScript and RenderPython turn the callable tools (Tools) into the text of the
// tools:sdk prompt section (SDKSection): usage instructions and declarations of every
// tool's arguments and canonical output, deterministic for a given tool set. The Python
// flavour is for the Starlark runtime and says so.
package codemode
