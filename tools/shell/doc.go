// Package shell provides the model-facing bash tool and the background job controls
// job_output, job_list and job_kill.
//
// Every command runs as "bash -c" (sh when bash is missing) in its own process group, with
// the workspace as its working directory (a workdir outside the workspace is refused with
// FS_SANDBOX_DENIED), stdin from /dev/null and a plain-terminal environment without
// credential-like variables. When a command times out (default 120 s, at most 600 s) or its
// call is cancelled, the whole group gets SIGTERM and, after a grace period, SIGKILL; when
// the command exits, whatever it left running in its group is stopped the same way. Only a
// process that leaves the group (setsid) can escape that, unless the sandbox is on.
//
// Each output stream keeps its last 64000 bytes in memory and, once longer, is written
// whole to a spill file. The model reads stdout, a "[stderr]" section and the exact markers
// of SPEC §10: "[output truncated; full output: <path|(unavailable)>]",
// "[sandbox: file access denied under <mode> mode]", "[timed out after <ms>ms]",
// "[killed by signal: <name>]" and "[exit code: <n>]", or "(no output)". A non-zero exit is
// an ordinary result, not an error; a cancelled call fails with "tool call aborted"
// (AbortError, ABORTED).
//
// Shell commands are not sandboxed unless Config.Sandbox is SandboxBwrap: then they run
// under bubblewrap with the workspace writable, the rest of the file system read-only, a
// private /tmp, no network, and a PID namespace that dies with the runner.
//
// Background commands (run_in_background) belong to the agent scope that started them. Their
// output is read incrementally with job_output; Jobs.Close (the undo of Install) kills every
// job when the session ends.
package shell
