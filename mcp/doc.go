// Package mcp connects dsh to the Model Context Protocol in both directions, with
// github.com/modelcontextprotocol/go-sdk (docs/behaviour.md §13).
//
// # Client bridge
//
// A Host mounts MCP servers declared in the configuration (`mcp.servers.NAME`, see
// ServerConfig) into a tool registry. Each server's tools are registered as
// mcp__<server>__<tool> (PublicToolName) with the server's input schema verbatim, so every
// MCP call passes the same pipeline as a built-in tool: rules, approvals, timeouts, the
// session log and Code Mode bindings. A call's canonical value is {content,
// structuredContent?} with the server's blocks preserved for programmatic callers; the
// model sees ProjectText of the blocks; a result with isError fails with that text.
//
// A Mount supervises one server: it connects (a stdio child process with a
// credential-scrubbed environment, see ChildEnv, which also marks the child's MCP nesting
// depth in DepthEnv so that a dsh mounted by dsh can refuse to mount dsh again, or a
// streamable HTTP endpoint), initializes within
// startupTimeoutMs, syncs the tool list in two phases (fetch every page, then swap
// generations atomically) and re-syncs on notifications/tools/list_changed. A lost
// connection is retried with exponential backoff per the reconnect policy while the last
// generation stays registered (its calls fail with MCP_NOT_CONNECTED); after maxAttempts
// consecutive failures the tools are unregistered. Calls are bounded by toolCallTimeoutMs,
// and a cancelled or timed-out call sends notifications/cancelled.
//
// The stdio transport frames messages itself so that a hostile server cannot take dsh or
// the connection down: malformed lines are skipped, a response larger than the message
// limit fails only its call, a crash fails the calls in flight with the exit status and the
// last stderr line. Every server's stderr is kept in a bounded buffer (Mount.Stderr) and
// protocol anomalies in a bounded list of notes (Mount.Notes).
//
// Images in MCP results are not admitted to model context: dsh has no attachment store on
// this path, so they are described in the projection and kept in the canonical value.
//
// # Server
//
// A Server exposes a registry as an MCP server (`dsh mcp serve`) over stdio or streamable
// HTTP. Each tools/call runs Registry.Execute with the request's context, so a client's
// notifications/cancelled cancels the running tool. Results carry the pipeline's content,
// isError for failures (with the failure's message and code under _meta "dsh/error") and
// the canonical value as structuredContent when the tool's output schema is an object.
// ServerOptions.OnSession gives each connection its own agent scope and session hooks;
// UnattendedApprover denies every approval request, since no person is watching.
package mcp
