// Package shell provides the model-facing bash tool and the background job controls
// job_output, job_list and job_kill.
//
// Every command runs as "bash -c" (sh when bash is missing) in its own process group, with
// the workspace as its working directory (a workdir outside the workspace is refused with
// FS_SANDBOX_DENIED), stdin from /dev/null and a plain-terminal environment without
// credential-like variables. When a command times out (default 120 s, at most 600 s) or its
// call is cancelled, everything it started gets SIGTERM and, after a grace period, SIGKILL;
// when the command exits, whatever it left running is stopped the same way.
//
// Each output stream keeps its last 64000 bytes in memory and, once longer, is written
// whole to a spill file. The model reads stdout, a "[stderr]" section and the exact markers
// of docs/behaviour.md §14: "[output truncated; full output: <path|(unavailable)>]",
// "[sandbox: file access denied under <mode> mode]", "[timed out after <ms>ms]",
// "[killed by signal: <name>]" and "[exit code: <n>]", or "(no output)". A non-zero exit is
// an ordinary result, not an error; a cancelled call fails with "tool call aborted"
// (AbortError, ABORTED).
//
// Background commands (run_in_background) belong to the agent scope that started them. Their
// output is read incrementally with job_output; Jobs.Close (the undo of Install) kills every
// job when the session ends.
//
// # Containment
//
// "Everything it started" includes processes that left the command's process group. The
// runner finds them by three marks: the process group, the command's own cgroup (created
// where cgroup v2 is writable, the command is born into it) and a DSH_SHELL_RUN variable
// every descendant inherits. The runner's process is a child subreaper, so double-forked and
// setsid'd descendants are re-parented to it instead of init; it kills and reaps them when
// the command ends. The command's own process gets SIGKILL as its parent-death signal, and a
// small guard process (/bin/sh) kills every command's cgroup, process group and marked
// processes when the runner's process dies, even by SIGKILL. Under the bwrap sandbox the
// command also runs in its own PID namespace that dies with the runner.
//
// Each command is limited to MaxProcesses processes and MaxMemoryBytes of memory: pids.max
// and memory.max of its cgroup where those controllers are available, otherwise
// RLIMIT_NPROC and RLIMIT_AS set by the shell before it runs the command.
//
// # Sandbox
//
// Config.Sandbox SandboxBwrap runs commands under bubblewrap (found at /usr/bin/bwrap or
// /bin/bwrap, never through $PATH) with the workspace writable, Config.ReadOnlyPaths and
// the rest of the file system read-only, a private /tmp, no network, and a PID namespace
// that dies with the runner. SandboxAuto does the same where a probe shows bubblewrap
// works, and otherwise runs commands unsandboxed after saying so once through
// Config.Notice. The zero value runs them unsandboxed (SandboxNone).
package shell
