package hostdir

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// dirOpenFlags open a directory for its descriptor only (O_PATH): it needs
// search permission on the path, not read permission on the directory.
const dirOpenFlags = unix.O_PATH

// openat2NoSymlinks opens the directory at p with one openat2(2) that
// refuses any symlink on the way (RESOLVE_NO_SYMLINKS, which also refuses
// magic links). ok is false where the kernel has no openat2 (before 5.6,
// or a seccomp filter): the caller walks the path instead.
func openat2NoSymlinks(p string) (f *os.File, ok bool, err error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	for try := 0; ; try++ {
		fd, err := unix.Openat2(unix.AT_FDCWD, p, &how)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), p), true, nil
		case err == unix.EINTR, err == unix.EAGAIN && try < 64:
			continue
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
			return nil, false, nil
		case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
			return nil, true, errPathChanged
		}
		return nil, true, &os.PathError{Op: "openat2", Path: p, Err: err}
	}
}
