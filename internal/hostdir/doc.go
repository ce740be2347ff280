// Package hostdir is the one place that finds and opens a host directory
// that a guest is to see: a queued task's mount, checked against a
// runner's mounts.allow (Open), or an embedder's or operator's own path
// (OpenAny: a plugin's manifest, `runner call --mount`). Every caller gets
// the same checks:
//
//   - the path is resolved first, every symlink followed, and must name a
//     directory (Resolve);
//   - the resolved path is opened once without following a symlink in
//     any component (Linux: openat2 with RESOLVE_NO_SYMLINKS; elsewhere,
//     or where openat2 is missing, one component at a time with
//     O_NOFOLLOW|O_DIRECTORY: open_unix.go, open_linux.go, open_bsd.go),
//     so a symlink put in the path after it was resolved makes the open
//     fail rather than lead elsewhere;
//   - the allow-list is checked on that descriptor, not on a path: from
//     the opened directory up through ".." (the kernel's parent), each
//     directory's device and inode are compared with those of the
//     allow-listed directories, opened the same way once per process
//     (hostdir.go: allowRootsOf);
//   - the directory is held (Dir.File): whoever mounts it mounts that
//     descriptor and never opens the path again.
//
// Without the *at system calls (open_other.go: not Unix) the check is on
// resolved paths; mounts need a Unix host anyway.
//
// Its callers: tasks (CheckSpec at submission, OpenMounts for the pool
// and `runner run`), sandbox (a plugin's or a run's mounts that name a
// path), cmd/runner (`runner call --mount`). It imports nothing of this
// module.
package hostdir
