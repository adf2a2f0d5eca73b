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
// A command pattern is a text pattern matched against a shell command after light
// normalization: runs of white space outside quotes become one space, and leading and
// trailing space is dropped, so "git status*" matches "git status", "git  status -s" and
// "git status --short". The command is also split into its simple commands at the
// unquoted control operators ; & | && || and newlines, at parentheses, and around command
// substitutions $(…) and `…`; leading variable assignments (FOO=1 cmd) and the reserved words
// { } ! if then else elif do while until time are dropped from each. Each piece is tried as
// written and with its quotes and backslash escapes removed ("git "push"" is also tried as
// "git push"):
//
//   - a deny or ask rule matches when it matches the whole command or any one piece, so
//     deny "bash(rm *)" catches "ls && rm -rf build";
//   - an allow rule set allows a command only when every piece is matched by some allow
//     rule, so allow "bash(git status*)" does not allow "git status; rm -rf ~" — unless a
//     wildcard-free allow pattern equals the whole command. A piece that redirects output
//     (an unquoted ">") is allowed only by a pattern that itself contains ">".
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
// elsewhere, and a shell command can reach any file. Command rules are a guardrail for an
// agent's ordinary commands, not a sandbox; workspace containment and the shell's own
// sandbox are the boundaries.
package rules
