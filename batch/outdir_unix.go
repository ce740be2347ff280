//go:build unix

package batch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openDirAt opens the folder name of the open folder dir (path its path)
// without following a link (O_NOFOLLOW: a link is errOutLink), making it
// first (mode 0755, less the umask) if it is missing and create is set.
// made says it was made (the caller fsyncs dir so that its name lasts).
func openDirAt(dir *os.File, path, name string, create bool) (f *os.File, made bool, err error) {
	full := filepath.Join(path, name)
	for {
		fd, err := unix.Openat(descriptor(dir), name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), full), made, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENOENT) && create && !made:
			err = ignoringEINTR(func() error { return unix.Mkdirat(descriptor(dir), name, 0o755) })
			if err != nil && !errors.Is(err, unix.EEXIST) {
				return nil, false, &fs.PathError{Op: "mkdir", Path: full, Err: err}
			}
			made = err == nil
			create = made // made, or made by another meanwhile: opened once more
			continue
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) || errors.Is(err, unix.ENOTDIR):
			var st unix.Stat_t
			if ignoringEINTR(func() error { return unix.Fstatat(descriptor(dir), name, &st, unix.AT_SYMLINK_NOFOLLOW) }) == nil &&
				st.Mode&unix.S_IFMT == unix.S_IFLNK {
				err = errOutLink
			}
		}
		return nil, false, &fs.PathError{Op: "open", Path: full, Err: err}
	}
}

// unlinkAt removes the file name of the open folder dir (path its path),
// through its descriptor: a link is removed, never followed.
func unlinkAt(dir *os.File, path, name string) error {
	if err := ignoringEINTR(func() error { return unix.Unlinkat(descriptor(dir), name, 0) }); err != nil {
		return &fs.PathError{Op: "remove", Path: filepath.Join(path, name), Err: err}
	}
	return nil
}
