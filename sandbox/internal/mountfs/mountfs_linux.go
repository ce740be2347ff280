package mountfs

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"unsafe"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
	"golang.org/x/sys/unix"
)

// atOps resolves every path with openat2(2) beneath the mount's directory
// (RESOLVE_BENEATH: no "..", absolute path or symlink leads above it;
// RESOLVE_NO_MAGICLINKS: no /proc-style link leads anywhere else), and
// runs operations on a last component with the *at system call on its
// parent directory, so opened, and a name without a slash that the kernel
// does not follow. A path ending in a slash makes the kernel follow a last
// symlink even for lstat, readlink or link: those resolve it with openat2
// too.
type atOps struct {
	dir *os.File // the mount's directory (O_PATH), opened through the root
	fd  int
}

// newAtOps returns the openat2 resolver, or nil if the kernel (or a
// seccomp filter) has no openat2.
func newAtOps(root *os.Root) (fsOps, error) {
	dir, err := root.OpenFile(".", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	a := &atOps{dir: dir, fd: int(dir.Fd())}
	fd, err := unix.Openat2(a.fd, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolveFlags})
	if err != nil {
		_ = dir.Close()
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
			return nil, nil // kernel before 5.6, or filtered: use os.Root
		}
		return nil, err
	}
	_ = unix.Close(fd)
	return a, nil
}

const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

// openat2 opens p beneath the mount. An escape is errEscape (the kernel
// says EXDEV); EAGAIN (a rename raced a lookup) and EINTR are retried.
func (a *atOps) openat2(p string, flags uint64, mode uint64) (int, error) {
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: mode, Resolve: resolveFlags}
	for try := 0; ; try++ {
		fd, err := unix.Openat2(a.fd, p, &how)
		switch {
		case err == nil:
			return fd, nil
		case err == unix.EINTR, err == unix.EAGAIN && try < 64:
			continue
		case err == unix.EXDEV:
			return -1, errEscape
		}
		return -1, err
	}
}

// parent opens dir for an *at call; release it with a.release.
func (a *atOps) parent(dir string) (int, error) {
	if dir == "." {
		return a.fd, nil
	}
	return a.openat2(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
}

func (a *atOps) release(fd int) {
	if fd != a.fd {
		_ = unix.Close(fd)
	}
}

func (a *atOps) open(p string, flag int, perm fs.FileMode) (*os.File, error) {
	var mode uint64
	if flag&unix.O_CREAT != 0 { // openat2 wants no mode otherwise
		mode = uint64(syscallMode(perm))
	}
	// O_NONBLOCK: a FIFO (or a device) the host left in the mount must not
	// hold the guest inside open(2), out of reach of every context.
	fd, err := a.openat2(p, uint64(flag|unix.O_NONBLOCK), mode)
	if err != nil {
		return nil, openErr(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	if err := checkOpened(st.Mode, fd, flag); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), p), nil
}

// fstatPath stats p, following a last symlink beneath the mount.
func (a *atOps) fstatPath(p string) (sys.Stat_t, error) {
	fd, err := a.openat2(p, unix.O_PATH, 0)
	if err != nil {
		return sys.Stat_t{}, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return sys.Stat_t{}, err
	}
	return statFromLinux(&st), nil
}

func statFromLinux(st *unix.Stat_t) sys.Stat_t {
	return statFromUnix(st.Mode, st.Dev, st.Ino, uint64(st.Nlink), st.Size,
		st.Atim.Nano(), st.Mtim.Nano(), st.Ctim.Nano())
}

func (a *atOps) lstat(p string) (sys.Stat_t, error) {
	dir, base, _, slash := splitMountPath(p)
	if slash {
		return a.fstatPath(p)
	}
	pfd, err := a.parent(dir)
	if err != nil {
		return sys.Stat_t{}, err
	}
	defer a.release(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return sys.Stat_t{}, err
	}
	return statFromLinux(&st), nil
}

func (a *atOps) stat(p string) (sys.Stat_t, error) {
	// A name at the top that is not a symlink: one fstatat, no open.
	if dir, base, _, slash := splitMountPath(p); dir == "." && !slash {
		var st unix.Stat_t
		if err := unix.Fstatat(a.fd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return sys.Stat_t{}, err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return statFromLinux(&st), nil
		}
	}
	return a.fstatPath(p)
}

// at runs fn on the parent of p and the last component of p as the *at
// call should see it.
func (a *atOps) at(p string, fn func(pfd int, base string) error) error {
	dir, _, baseArg, _ := splitMountPath(p)
	pfd, err := a.parent(dir)
	if err != nil {
		return err
	}
	defer a.release(pfd)
	return fn(pfd, baseArg)
}

func (a *atOps) mkdir(p string, perm fs.FileMode) error {
	return a.at(p, func(pfd int, base string) error {
		return unix.Mkdirat(pfd, base, syscallMode(perm))
	})
}

func (a *atOps) rmdir(p string) error {
	return a.at(p, func(pfd int, base string) error {
		return unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR)
	})
}

func (a *atOps) unlink(p string) error {
	return a.at(p, func(pfd int, base string) error {
		return unix.Unlinkat(pfd, base, 0)
	})
}

func (a *atOps) rename(from, to string) error {
	return a.at(from, func(fromFd int, fromBase string) error {
		return a.at(to, func(toFd int, toBase string) error {
			return unix.Renameat(fromFd, fromBase, toFd, toBase)
		})
	})
}

func (a *atOps) link(oldPath, newPath string) error {
	if _, _, _, slash := splitMountPath(oldPath); slash {
		// "old/" names what old resolves to (a directory, or an error):
		// link that, as ".", so the kernel reports what it would.
		fd, err := a.openat2(oldPath, unix.O_PATH, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return a.at(newPath, func(newFd int, newBase string) error {
			return unix.Linkat(fd, ".", newFd, newBase, 0)
		})
	}
	return a.at(oldPath, func(oldFd int, oldBase string) error {
		return a.at(newPath, func(newFd int, newBase string) error {
			return unix.Linkat(oldFd, oldBase, newFd, newBase, 0)
		})
	})
}

func (a *atOps) symlink(target, linkPath string) error {
	return a.at(linkPath, func(pfd int, base string) error {
		return unix.Symlinkat(target, pfd, base)
	})
}

func (a *atOps) readlink(p string) (string, error) {
	dir, base, _, slash := splitMountPath(p)
	var pfd int
	var err error
	if slash {
		// "link/" is what link resolves to, never a symlink itself.
		pfd, err = a.openat2(p, unix.O_PATH, 0)
		base = "."
	} else {
		pfd, err = a.parent(dir)
	}
	if err != nil {
		return "", err
	}
	defer a.release(pfd)
	for n := 128; ; n *= 2 {
		b := make([]byte, n)
		r, err := unix.Readlinkat(pfd, base, b)
		if err != nil {
			return "", err
		}
		if r < n {
			return string(b[:r]), nil
		}
	}
}

func (a *atOps) close() error { return a.dir.Close() }

// withSyscallOflag adds the flags the os package has no name for.
// Adapted from wazero's internal/sysfs (Apache-2.0).
func withSyscallOflag(oflag experimentalsys.Oflag, flag int) int {
	if oflag&experimentalsys.O_DIRECTORY != 0 {
		flag |= syscall.O_DIRECTORY
	}
	if oflag&experimentalsys.O_DSYNC != 0 {
		flag |= syscall.O_DSYNC
	}
	if oflag&experimentalsys.O_NOFOLLOW != 0 {
		flag |= syscall.O_NOFOLLOW
	}
	if oflag&experimentalsys.O_NONBLOCK != 0 {
		flag |= syscall.O_NONBLOCK
	}
	if oflag&experimentalsys.O_RSYNC != 0 {
		flag |= syscall.O_RSYNC
	}
	return flag
}

// futimens sets the times of an open file, with nanoseconds and
// UTIME_OMIT, as wazero does on Linux: utimensat with a NULL path.
func futimens(fd uintptr, atim, mtim int64) experimentalsys.Errno {
	// When both inputs are omitted, there is nothing to change.
	if atim == experimentalsys.UTIME_OMIT && mtim == experimentalsys.UTIME_OMIT {
		return 0
	}
	var times [2]syscall.Timespec
	for i, t := range [2]int64{atim, mtim} {
		if t == experimentalsys.UTIME_OMIT {
			times[i] = syscall.Timespec{Nsec: unix.UTIME_OMIT}
		} else {
			times[i] = syscall.NsecToTimespec(t)
		}
	}
	_, _, e := syscall.Syscall6(syscall.SYS_UTIMENSAT, fd, 0 /* NULL */, uintptr(unsafe.Pointer(&times)), 0, 0, 0)
	if e != 0 {
		return experimentalsys.UnwrapOSError(e)
	}
	return 0
}

// datasync is fdatasync(2).
func datasync(f *os.File) experimentalsys.Errno {
	return experimentalsys.UnwrapOSError(syscall.Fdatasync(int(f.Fd())))
}
