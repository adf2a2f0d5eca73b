// Package fs provides dsh's built-in file tools — read, write and edit — confined to one
// workspace directory, together with the filesystem observation policy that keeps an agent
// from overwriting what it has not seen (docs/behaviour.md §14, §11.4, §12).
//
// # Tools
//
//   - read returns a line-numbered window of a UTF-8 text file inside the read envelope
//     (<path>…</path>, <type>file</type>, <content>…</content>) with a continuation or
//     end-of-file footer. Large files are streamed, never loaded whole. It is
//     concurrency-safe.
//   - write creates a file or replaces its whole content, atomically (a temporary file in
//     the same directory renamed into place, keeping the file's mode). It is exclusive.
//   - edit replaces a literal string, exactly once unless replace_all is set, atomically and
//     keeping the file's line-ending style. It is exclusive.
//
// # Paths and text
//
// A file_path is relative to the workspace root or absolute inside it (or, for read, inside a
// read-only root). Results and messages
// show it made absolute against the root as configured (symbolic links kept as spelled), as
// the reference does; diff cards show file_path as given. Text is UTF-8: read and edit refuse
// binary files (a NUL byte in read's first 8192 bytes, anywhere for edit) and invalid UTF-8
// with FS_NOT_TEXT. A leading byte-order mark is not part of the text; edit keeps it in the
// file (the reference drops it). edit matches and reports content with CRLF normalized to LF
// and writes the file back with the line-ending style that dominates its first 4096
// characters. edit loads the whole file and refuses files over 256 MiB with FS_TOO_LARGE.
//
// # Workspace containment
//
// Every path is resolved inside the workspace root through an [os.Root] plus explicit checks.
// A path that lexically leaves the root (".." or an absolute path elsewhere), a symbolic link
// whose target lies outside the root (at any component, followed hop by hop), and a write or
// edit of a regular file with more than one hard link are refused with FS_SANDBOX_DENIED and a
// message that names the path. The tools create no symbolic links.
//
// Read-only roots ([Config.ReadOnlyRoots]) extend what read may open: an absolute path inside
// one is resolved through that directory's own [os.Root] with the same checks (its symbolic
// links must stay inside it), while write and edit refuse every path there with
// FS_SANDBOX_DENIED naming the path and the directory. They exist so the model can read the
// full outputs that other tools save outside the workspace and name in their results. A path
// belongs to the deepest root that contains it; reads of read-only files record no
// observation.
//
// # Protected paths
//
// Some paths inside the reach of the tools are read-only to them: the workspace's .git (a
// repository directory, or a .git file or symbolic link together with the directory it
// points to and a linked worktree's common directory), the workspace's .dsh, and
// [Config.Home], the user's dsh home. A planted git hook or a rewritten project policy would
// outlive the session, so write and edit refuse every path inside them with
// FS_PROTECTED_PATH, naming the path, the protected path and how to open it; read works as
// everywhere else. The check is made on the path as spelled and again on its canonical
// location (every symbolic link and ".." resolved), with ASCII case folded, and a hard link
// to a protected file is refused like every multiply-linked file. [Config.OpenProtected]
// exempts chosen paths, each with everything below it. [Tools.Protected] lists the set, for
// a sandbox to mount read-only.
//
// Hard links: a file's other links cannot be enumerated, so a file with Nlink > 1 may share
// its inode with a path outside the workspace. Writing it would either change that outside
// file (an in-place write) or silently split the link (an atomic rename), so write and edit
// refuse it. Reading it is allowed: the bytes are reachable through a directory entry inside
// the workspace, the read traverses no path outside it, and creating a link to a file one
// cannot read is prevented by the kernel (fs.protected_hardlinks), so the read discloses
// nothing that the workspace does not already hold.
//
// # Observation policy
//
// Unless [Config.NoObservation] is set, the tools remember per owner (the calling agent's
// [github.com/dsh-go/dsh/tool.Scope]; calls without an agent share one direct owner) and per canonical path what
// was last observed: present with a version, or absent. edit requires a present
// observation (FS_NOT_OBSERVED otherwise, FS_NOT_FOUND after an observed absence); write
// without a present observation may only create (FS_NOT_OBSERVED for an existing file); and
// both fail FS_STALE_VERSION when the file changed since it was observed. A windowed read
// authorizes a full overwrite: the policy is about freshness, not about having seen
// everything.
//
// A version is the file's identity and freshness metadata (device, inode, size, modification
// and change times in nanoseconds) plus a keyed 64-bit hash of the bytes that were read or
// written. The metadata alone misses an in-place rewrite of equal size within one timestamp
// tick (many filesystems stamp times at a few milliseconds' granularity); the hash alone
// would force a full read to detect a change the metadata already shows. Together, a file
// replaced between a read and an edit is detected whatever its size. read and edit read the
// whole file anyway; a guarded write reads the current content once when the metadata
// matches.
package fs
