// Package session is dsh's durable session log: the append-only list of events an agent
// interaction produces (docs/behaviour.md §9.1, §9.2), the model history derived from it, and the file
// store that keeps it across crashes.
//
// # Events
//
// An Event is {type, seq, time, data, sourceEventSeqs?, surfaceOp?, ignorable?}. A Log
// assigns seq contiguously from 0 and time in epoch milliseconds, and snapshots data into
// the lossless JSON model of package jsonv at append; data that is not lossless JSON is
// refused with `session event "<type>" carries non-JSON-serializable data`. Appends are
// also checked: the type must be known (KnownType) unless the event is ignorable; only
// user/message, assistant/message and tool/result may carry surface metadata and they must
// (surfaceOp "append"); sourceEventSeqs cite earlier events without duplicates; and the
// payloads of the core types (turn/*, step/*, messages, tool/call, tool/result,
// tool/code-dispatch*, approval/*) have their documented shape. The payload types in this
// package (ToolCall, ToolResult, …) build those events byte-exactly and decode them back.
//
// DeriveMessages rebuilds the model history from the surface events (a log derives each
// surface event's message once, when it checks the event, and keeps it); RecoveryEvents
// computes the closers of a crash-interrupted turn (TOOL_OUTCOME_UNKNOWN for a call with a
// durable tool/call but no result, TOOL_NOT_STARTED for a requested call never recorded,
// then step/end and turn/end {kind:"interrupted"}), with the reference harness's texts.
//
// # Durability
//
// A Log has two append paths. AppendDurable returns once the event and everything before
// it are written and fsynced; the agent loop uses it for tool/call, so the log never
// claims less than happened. Append is live: a FileLog coalesces live events for
// Options.WriteBatchMaxDelay (default 200 ms) in a background goroutine and writes them as
// one batch; Flush and Close write what is pending. Memory is the in-memory Log.
//
// # Stores
//
// Store is the interface of where sessions are kept; FileStore keeps them in files (below)
// and package session/pgstore in PostgreSQL, with the same event bytes and the same
// recovery. Export and Import move a session between any two stores unchanged.
//
// # Files
//
// A FileStore keeps one file per session:
//
//	<root>/--<ProjectKey(cwd)>--/<EncodeSegment(id)>/session.jsonl.zstd
//	<root>/_no-cwd/<EncodeSegment(id)>/session.jsonl.zstd
//
// The default root is $DSH_HOME/sessions, or ~/.dsh/sessions (DefaultRoot). The file is
// JSON lines: the Header line {type:"session", version:0, id, createdAt, cwd?, …,
// delegationDepth}, then one event per line. With the default zstd compression the file
// is a concatenation of independent Zstandard frames, each with a content checksum: one
// frame for the header line and one per written batch, so `zstdcat` prints the JSONL. With
// CompressionNone the file is session.jsonl with the plain lines; a root holds one
// encoding only. dsh writes one event per line; it neither writes nor reads the
// reference's packed assistant/chunk rows.
//
// The file is created with the first batch, atomically: header and batch are written and
// fsynced under a temporary name, hard-linked to the final name (which fails rather than
// overwrite) and the directory is fsynced. Each later batch is appended and fsynced; a
// failed append is truncated away so a retry cannot leave damage mid-file. While a FileLog
// is open it holds an advisory lock on its file, refusing a second writer.
//
// Session ids from NewID are the UTC creation second and 32 random bits,
// "20261129T140501Z-3f9a2c1d": they sort by creation time and are unique in practice, and
// Create refuses an id that already has a log.
//
// # Loading
//
// FileStore.Load decodes the file record by record (frame or line). A damaged record —
// truncated, bad checksum, unparsable — is a torn tail when no intact record follows it:
// it is dropped, and Loaded.TornBytes says how much (complete lines inside a torn frame
// are not salvaged; the whole last batch goes). Damage followed by an intact record, a bad
// header, and an intact record holding an invalid event (unknown required type, seq gap,
// malformed payload) are a *CorruptError naming the file and byte offset. Load then adds
// RecoveryEvents in memory; FileStore.Resume also cuts the torn tail off the file, appends the
// recovery events durably, and returns the FileLog to continue the session; FileStore.Reopen
// cuts the torn tail but appends nothing, for a writer that finishes the open turn itself.
//
// Surface replacement (the reference's compaction surfaceOp objects) is not supported:
// such a log is refused.
package session
