// Package mountfs is the file system of a run's mounts: a wazero
// experimental/sys.FS (FS, made by Open) that serves one host directory to
// a guest (a directory its caller opened and holds, by internal/hostdir:
// Open takes no path), with every path resolved beneath it (openat2 with
// RESOLVE_BENEATH on Linux, os.Root elsewhere), a read-only wrapper
// (ReadOnly), and the run's shared budget of open files and disk (Budget).
//
// Its invariant: no path a guest makes or finds (a "..", a symlink,
// relative or absolute, made by the guest or left by the host) leads out
// of the mount; a read-only mount refuses every write; and writes, growths
// and creations are bounded by the disk budget, refused with EIO (which
// sandbox turns into ENOSPC) before the system call.
//
// Only sandbox imports it: mounts are Unix-only, and elsewhere Open fails.
package mountfs
