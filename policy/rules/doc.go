// Package rules is dsh's permission rules: allow, ask and deny lists of patterns in the
// configuration that decide, before any approval prompt, whether a tool call may run.
//
//	permissions:
//	  allow: [read, glob, grep, "bash(git status*)", "bash(go test *)"]
//	  ask:   ["bash(git push*)", "write(src/**)", "mcp__*"]
//	  deny:  ["read(**/.env)", "bash(rm -rf *)"]
//
// # Grammar
//
// A pattern is a tool-name pattern, optionally followed by an argument pattern in
// parentheses:
//
//	pattern  = tool [ "(" argument ")" ]
//	tool     = one or more characters other than "(", ")" and white space; "*" matches any
//	           sequence ("mcp__*", "*"), everything else is literal
//	argument = any non-empty text; it runs to the last ")" of the pattern, so it may hold
//	           parentheses itself
//
// A pattern without an argument matches every call of the tools it names. An argument
// pattern is matched against the call's primary argument, which depends on the tool:
//
//	bash, pwsh                    command    command pattern
//	read, write, edit, read_image file_path  path pattern
//	str_replace_editor            path       path pattern
//	glob, grep                    path       path pattern (absent: the workspace root)
//	web_fetch                     url        text pattern
//	any other tool                the arguments as canonical JSON (members sorted,
//	                              compact), text pattern — e.g. mcp__db__query(*DROP*)
//
// When a call lacks its primary argument (or it is not a string), the canonical JSON of its
// arguments is used as for other tools; such a call fails argument validation anyway.
//
// A text pattern matches the whole value; "*" matches any sequence, everything else is
// literal.
//
// A command pattern is a text pattern matched against a shell command. The command is
// parsed as bash parses it (with mvdan.cc/sh/v3/syntax), and the pattern is matched
// against the whole command (runs of white space outside quotes made one space) and against
// every simple command that may run anywhere in it: in pipelines and lists (; & | && ||),
// subshells and { } groups, command substitutions $(…) and `…`, process substitutions <(…)
// and >(…), function bodies, if/while/until/for/case bodies, assignments, here-documents,
// parameter expansions and redirection targets. A simple command is matched as its words
// written (quotes kept, one space between words, its redirections after them), with its
// quotes and backslash escapes removed ("git "push"" is also "git push"), and with the
// directory of its program removed ("/bin/rm x" and "./rm x" are also "rm x"); leading
// variable assignments (FOO=1 cmd) are not part of it.
//
// A command that runs another command is unwrapped, and each command found is matched too:
// the wrappers command, builtin, exec, env (with its NAME=value words and options, and the
// string of -S), nohup, nice, time, timeout, stdbuf, setsid, xargs (the command gets the
// arguments xargs reads, so "xargs rm" matches "rm *"), sudo, doas, su -c, script -c,
// flock, watch, chroot, ionice, taskset, unbuffer, strace, ltrace, fakeroot, unshare,
// proxychains, torsocks, busybox, valgrind, firejail, catchsegv, caffeinate, sg and
// dbus-run-session; the
// commands of find -exec, -execdir, -ok and -okdir; the action of trap; and the string of
// sh, bash, zsh, dash, ksh, mksh, ash, yash, posh and rbash -c, and of eval, which are
// parsed in turn (up to 8 levels deep and 64 strings for one command).
//
// A pwsh command is read with the same grammar; what of PowerShell's syntax it cannot read
// counts as unresolvable (below), which only makes the rules stricter.
//
// What cannot be resolved before the command runs is treated as possibly running anything:
// a program name computed at run time ($(echo rm) x, $CMD x, `…`, a glob or brace
// expansion such as /bin/r? or {rm,}, $'\x72m'), eval or sh -c of a computed string, a
// wrapper argument computed at run time, source or . of a file, a shell running a script
// file or its standard input (… | sh), alias NAME=…, hash -p, enable -f and mapfile -C
// (they make a name run something else), and a command that does not parse. For such a
// command every deny and ask command pattern of the tool counts as matching (the reason
// says what could not be resolved), and allow never does.
//
//   - a deny or ask rule matches when it matches the whole command or any form of any
//     simple command in it, so deny "bash(rm *)" catches "ls && rm -rf build",
//     "env rm x", "bash -c 'rm x'" and "echo x | xargs rm";
//   - an allow rule set allows a command only when it can be resolved and every program
//     that runs in it is matched by some allow rule — a wrapper is judged by the command
//     it runs, so allow "bash(go test *)" allows "timeout 60 go test ./...", and allow
//     "bash(git status*)" does not allow "git status; rm -rf ~" or "git status $(rm x)" —
//     unless a wildcard-free allow pattern equals the whole command. For allow the
//     program's directory is kept: allowing "ls" does not allow "/tmp/x/ls". A command that
//     redirects output to a file (other than /dev/null), or sits in a group or subshell
//     that does, is allowed only by a pattern that itself contains ">"; the command of
//     xargs only by a pattern ending in "*".
//
// A path pattern is matched against the requested path made absolute against the workspace
// and cleaned ("src/../.env" is ".env"). Segments are separated by "/"; "**" as a whole
// segment matches any number of segments (including none), "*" any sequence within one
// segment, everything else is literal. A pattern starting with "/" is matched against the
// absolute path; any other pattern against the path relative to the workspace (a path
// outside the workspace never matches it), except that a pattern starting with "**/" also
// matches anywhere on the file system: "read(**/.env)" protects every .env file. A trailing
// "/" stands for "/**" (a directory and everything below it).
//
// # Decisions
//
// For each call the rules give at most one verdict, deny before ask before allow:
//
//   - deny: the call is refused with the reason `tool "<name>" is denied by permission
//     rule "<pattern>"`;
//   - ask: the call goes to the approval service with the reason `tool "<name>" requires
//     approval by permission rule "<pattern>"` (without an approval service, that reason is
//     the denial);
//   - allow: the call is pre-approved — an "ask" of a later pre-execute hook becomes allow —
//     but a later hook's deny still stands;
//   - no rule matches: no opinion, the later hooks decide.
//
// # Enforcement
//
// Install adds a pre-execute hook in front of the hooks already registered and a guard.
// Guards run after every pre-execute hook and after approval, and the first guard reason
// denies the call, so a deny rule holds even when a hook registered later in front of the
// rules (or an approval) lets the call through.
//
// Rules match the arguments a call requests, not what the tool ends up touching: a grep of
// the whole workspace reads files below a denied directory, a symbolic link can lead
// elsewhere, and a shell command can reach any file. Command rules see the programs a
// command names; they cannot see what those programs do (a script, a Makefile, python -c,
// git aliases and hooks, an interpreter reading its own input) — workspace containment and
// the shell's sandbox are the boundaries for that.
package rules
