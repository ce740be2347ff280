//go:build unix && !linux

package mountfs

import (
	"os"
	"syscall"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// newAtOps returns nil: openat2 is Linux's; mounts resolve with os.Root.
func newAtOps(*os.Root) (fsOps, error) { return nil, nil }

// withSyscallOflag adds the flags the os package has no name for.
// Adapted from wazero's internal/sysfs (Apache-2.0).
func withSyscallOflag(oflag experimentalsys.Oflag, flag int) int {
	if oflag&experimentalsys.O_DIRECTORY != 0 {
		flag |= syscall.O_DIRECTORY
	}
	if oflag&experimentalsys.O_NOFOLLOW != 0 {
		flag |= syscall.O_NOFOLLOW
	}
	if oflag&experimentalsys.O_NONBLOCK != 0 {
		flag |= syscall.O_NONBLOCK
	}
	return flag
}

// futimens is not implemented here: wazero then sets the times by path
// (FS.Utimens).
func futimens(uintptr, int64, int64) experimentalsys.Errno { return experimentalsys.ENOSYS }

// datasync falls back to fsync(2).
func datasync(f *os.File) experimentalsys.Errno {
	return experimentalsys.UnwrapOSError(f.Sync())
}
