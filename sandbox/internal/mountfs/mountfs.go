//go:build unix

package mountfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// FS is the file system of one mount: a host directory the guest sees
// through WASI, with every path resolved beneath it. wazero's own DirFS
// joins path strings and lets the kernel follow every symlink, so a guest
// that plants a symlink to "../../.." (or finds one the host left) reaches
// any host file; here no path, symlink (relative or absolute, made by the
// guest or by the host) or ".." leads out of the directory.
//
// Paths are resolved in one of two ways, both beneath the same directory:
//
//   - Linux (5.6+): openat2(2) with RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS
//     on the mount's directory descriptor. The kernel resolves the whole
//     path in one call and refuses, atomically, any step that leaves the
//     directory. An operation on the last component (mkdir, unlink, rename,
//     link, symlink, readlink, lstat) runs as the *at system call on the
//     directory so opened, with a name that has no slash in it, so it never
//     follows a symlink; the errors are the kernel's, as with DirFS.
//   - Elsewhere, or if openat2 is missing: os.Root, which resolves each
//     component itself and refuses symlinks that leave the root (see
//     rootOps for the few places its errors differ from the kernel's).
//
// Chmod and Utimens always go through os.Root (whose Chmod and Chtimes
// follow a last symlink only beneath the root).
//
// A path that would leave the directory fails with EPERM, the errno wazero
// itself gives a guest path that is absolute or has a ".." (WASI's
// ENOTCAPABLE has no experimental/sys equivalent): a ".." that climbs above
// the mount, a symlink whose target is absolute or climbs above it, a
// magic link. Symlinks that stay inside work as they do with DirFS, and a
// guest may still create any relative symlink (only following it is
// checked). Hard links cannot lead out: the guest can only name files
// beneath the mount. A ".." in a path that stays inside is cleaned
// lexically against the mount's root before anything is resolved ("a/../b"
// is "b", "a/b/.." is "a"), never followed on the host; what it climbs out
// of must be a directory beneath the mount, and the root's ".." is refused
// (cleanMountPath). wazero cleans a guest's paths itself and refuses a
// leading ".." relative to a directory descriptor before the mount sees
// it; this is for the paths that do reach the mount with a "..".
//
// Inside the directory, results and errnos are DirFS's (TestMountFSParity),
// with two more exceptions: Rmdir(".") is EINVAL, as rmdir("dir/.") is,
// where DirFS removes the mount's directory itself if it is empty; and an
// open never blocks: a FIFO, socket or device node is refused with ENOTSUP
// (checkOpened), where DirFS waits in open(2) for a FIFO's writer. The
// run's disk budget (Budget) may refuse a write, a growth or a creation
// with EIO, which the guest sees as ENOSPC.
//
// Close releases the directory's descriptors; wazero never closes a
// sys.FS, so the run that made it does.
type FS struct {
	experimentalsys.UnimplementedFS

	dir    string
	root   *os.Root
	ops    fsOps
	shared *Budget // shared by every mount of a run
}

// fsOps resolves paths beneath the mount and runs the operations of
// experimental/sys.FS that depend on how. Paths are already checked by
// cleanMountPath. Errors are raw: syscall errnos, os errors or errEscape;
// mountErrno maps them.
type fsOps interface {
	open(path string, flag int, perm fs.FileMode) (*os.File, error)
	lstat(path string) (sys.Stat_t, error)
	stat(path string) (sys.Stat_t, error)
	mkdir(path string, perm fs.FileMode) error
	rename(from, to string) error
	rmdir(path string) error
	unlink(path string) error
	link(oldPath, newPath string) error
	symlink(target, linkPath string) error
	readlink(path string) (string, error)
	close() error
}

// errEscape reports a path that would resolve outside the mount.
var errEscape = errors.New("path escapes the mount")

// errNoDir is Open without a directory: a mount is never opened by path.
var errNoDir = errors.New("no directory to mount: a mount's directory is opened and held by its caller (internal/hostdir), never by path here")

// Open opens the mount of a run or a plugin instance: dir, a directory
// the caller opened once and checked (internal/hostdir), never a path:
// hostPath only names it, in messages. Its open files and disk count
// against shared, the run's (nil: a budget of its own, with no disk
// budget). Close releases its descriptors; dir stays open (the caller's).
func Open(hostPath string, dir *os.File, shared *Budget) (*FS, error) {
	if dir == nil {
		return nil, errNoDir
	}
	root, err := rootOfDir(dir)
	if err != nil {
		return nil, err
	}
	return newMountFSOnRoot(hostPath, root, true, shared)
}

// rootOfDir makes an os.Root of an open directory, which stays open (the
// caller's). os.Root opens only by name, so the name is the descriptor's
// own (/proc/self/fd/N on Linux, /dev/fd/N elsewhere), which the kernel
// resolves to the open directory itself, not to a path: renaming the
// directory or putting a symlink where it was changes nothing. The root
// is checked to be that directory (device and inode).
func rootOfDir(dir *os.File) (*os.Root, error) {
	want, err := dir.Stat()
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(fdPath(dir))
	if err != nil {
		return nil, fmt.Errorf("opening the mount's directory through its descriptor: %w", err)
	}
	got, err := root.Stat(".")
	if err != nil || !os.SameFile(want, got) {
		_ = root.Close()
		return nil, errors.New("opening the mount's directory through its descriptor gave another directory")
	}
	return root, nil
}

// fdPath names an open file by its descriptor.
func fdPath(f *os.File) string {
	if runtime.GOOS == "linux" {
		return "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	}
	return "/dev/fd/" + strconv.Itoa(int(f.Fd()))
}

// newMountFSOnRoot is a mount of root, named dir, which it owns.
func newMountFSOnRoot(dir string, root *os.Root, useAt bool, shared *Budget) (*FS, error) {
	if shared == nil {
		shared = new(Budget)
	}
	m := &FS{dir: dir, root: root, shared: shared}
	if useAt {
		ops, err := newAtOps(root)
		if err != nil {
			_ = root.Close()
			return nil, err
		}
		m.ops = ops // nil where openat2 is missing
	}
	if m.ops == nil {
		m.ops = rootOps{root}
	}
	return m, nil
}

// readOnlyMount wraps a mount so that it refuses every write. wazero's
// sysfs.ReadFS refuses opens for writing, but lets through O_RDONLY with
// O_CREAT or O_TRUNC (which WASI's path_open asks for when the guest
// requests only the read right), creating or emptying files in a
// read-only mount; those fail here with EROFS.
type readOnlyMount struct {
	sysfs.ReadFS
}

// ReadOnly returns fs (a mount), read-only: every write fails.
func ReadOnly(fs experimentalsys.FS) experimentalsys.FS {
	return &readOnlyMount{sysfs.ReadFS{FS: fs}}
}

// OpenFile implements experimentalsys.FS.
func (r *readOnlyMount) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if flag&(experimentalsys.O_CREAT|experimentalsys.O_TRUNC) != 0 {
		return nil, experimentalsys.EROFS
	}
	return r.ReadFS.OpenFile(path, flag, perm)
}

// String implements fmt.Stringer.
func (m *FS) String() string { return m.dir }

// Close releases the mount's directory.
func (m *FS) Close() error {
	return errors.Join(m.ops.close(), m.root.Close())
}

// OpenFile implements experimentalsys.FS.
func (m *FS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	p, errno := m.path(path)
	if errno != 0 {
		return nil, errno
	}
	if !m.shared.files.take() {
		return nil, experimentalsys.EAGAIN
	}
	charged := false
	if flag&experimentalsys.O_CREAT != 0 && m.creates(p) {
		if !m.shared.chargeFile() {
			m.shared.files.release()
			return nil, errNoSpace
		}
		charged = true
	}
	f, err := m.ops.open(p, toOsOpenFlag(flag), perm)
	if err != nil {
		m.shared.files.release()
		if charged {
			m.shared.refundFile()
		}
		return nil, mountErrno(err)
	}
	mf := newMountFile(m, p, flag, perm, f)
	if p == "." && perm == 0 {
		// wazero's own open of the mount's directory for its preopen, on
		// first use (a guest's path_open asks for mode 0o600): not the
		// guest's (Budget.GuestOpenFiles). A wazero that changed either
		// mode would fail the sandbox's TestSuspendWithReadOnlyMount,
		// whose guest holds the directory open in its odd rounds.
		mf.(*mountFile).preopen = true
		m.shared.preopens.Add(1)
	}
	return mf, 0
}

// creates reports whether an open of p with O_CREAT would create a file:
// p (its last symlink followed, beneath the mount) does not exist. Only
// asked when there is a file budget; a concurrent change of the host
// directory can make it count a file that the open then finds.
func (m *FS) creates(p string) bool {
	if m.shared.maxFiles <= 0 {
		return false
	}
	_, err := m.ops.stat(p)
	return errors.Is(err, fs.ErrNotExist)
}

// reopen opens path again for a mountFile.
func (m *FS) reopen(path string, flag experimentalsys.Oflag, perm fs.FileMode) (*os.File, experimentalsys.Errno) {
	f, err := m.ops.open(path, toOsOpenFlag(flag), perm)
	return f, mountErrno(err)
}

// errNoSpace is what a mount returns when the run's disk budget refuses a
// call: EIO, the only errno wazero can carry for it, which the caller
// turns into ENOSPC for the guest (Budget.TakeRefused; sandbox's
// diskErrnoListener).
const errNoSpace = experimentalsys.EIO

// charged runs op, which creates one file, against the file budget: the
// file is charged first and given back if op fails.
func (m *FS) charged(op func() experimentalsys.Errno) experimentalsys.Errno {
	if !m.shared.chargeFile() {
		return errNoSpace
	}
	errno := op()
	if errno != 0 {
		m.shared.refundFile()
	}
	return errno
}

// Lstat implements experimentalsys.FS.
func (m *FS) Lstat(path string) (sys.Stat_t, experimentalsys.Errno) { return m.stat(path, true) }

// Stat implements experimentalsys.FS.
func (m *FS) Stat(path string) (sys.Stat_t, experimentalsys.Errno) { return m.stat(path, false) }

// stat is Stat, or Lstat where link: the attributes of path, or of the
// symlink itself where link and path is one.
func (m *FS) stat(path string, link bool) (sys.Stat_t, experimentalsys.Errno) {
	p, errno := m.path(path)
	if errno != 0 {
		return sys.Stat_t{}, errno
	}
	var st sys.Stat_t
	var err error
	if link {
		st, err = m.ops.lstat(p)
	} else {
		st, err = m.ops.stat(p)
	}
	return st, mountErrno(err)
}

// Mkdir implements experimentalsys.FS.
func (m *FS) Mkdir(path string, perm fs.FileMode) experimentalsys.Errno {
	p, errno := m.lastPath(path, experimentalsys.EEXIST)
	if errno == experimentalsys.ENOTDIR { // as below
		errno = experimentalsys.ENOENT
	}
	if errno != 0 {
		return errno
	}
	return m.charged(func() experimentalsys.Errno {
		// As DirFS: a parent that is not a directory is ENOENT.
		errno := mountErrno(m.ops.mkdir(p, perm))
		if errno == experimentalsys.ENOTDIR {
			errno = experimentalsys.ENOENT
		}
		return errno
	})
}

// Chmod implements experimentalsys.FS.
func (m *FS) Chmod(path string, perm fs.FileMode) experimentalsys.Errno {
	p, errno := m.path(path)
	if errno != 0 {
		return errno
	}
	return mountErrno(m.root.Chmod(p, perm))
}

// Rename implements experimentalsys.FS.
func (m *FS) Rename(from, to string) experimentalsys.Errno {
	f, errno := m.path(from)
	if errno != 0 {
		return errno
	}
	t, errno := m.path(to)
	if errno != 0 {
		return errno
	}
	switch {
	case lastIsDotDot(from) || lastIsDotDot(to):
		return mountErrno(syscall.EBUSY) // as rename(2); EIO, as DirFS has it
	case f == t: // as DirFS
		return 0
	case f == ".":
		// DirFS names the mount's directory by its host path: the kernel
		// refuses to move it into itself, or to replace it by an entry.
		return experimentalsys.EINVAL
	case t == ".":
		if _, errno := m.Lstat(f); errno != 0 {
			return errno
		}
		return experimentalsys.ENOTEMPTY
	}
	return mountErrno(m.ops.rename(f, t))
}

// Rmdir implements experimentalsys.FS.
func (m *FS) Rmdir(path string) experimentalsys.Errno {
	p, errno := m.lastPath(path, experimentalsys.ENOTEMPTY) // as rmdir(2)
	if errno != 0 {
		return errno
	}
	return mountErrno(m.ops.rmdir(p))
}

// Unlink implements experimentalsys.FS.
func (m *FS) Unlink(path string) experimentalsys.Errno {
	p, errno := m.lastPath(path, experimentalsys.EISDIR) // as unlink(2)
	if errno != 0 {
		return errno
	}
	// As DirFS: POSIX says EPERM for a directory, WASI wants EISDIR (an
	// escape stays EPERM).
	err := m.ops.unlink(p)
	if errno = mountErrno(err); errno == experimentalsys.EPERM && !isEscape(err) {
		errno = experimentalsys.EISDIR
	}
	return errno
}

// Link implements experimentalsys.FS.
func (m *FS) Link(oldPath, newPath string) experimentalsys.Errno {
	o, errno := m.path(oldPath)
	if errno != 0 {
		return errno
	}
	n, errno := m.lastPath(newPath, experimentalsys.EEXIST) // as link(2)
	if errno != 0 {
		return errno
	}
	return m.charged(func() experimentalsys.Errno { return mountErrno(m.ops.link(o, n)) })
}

// Symlink implements experimentalsys.FS.
func (m *FS) Symlink(oldPath, linkName string) experimentalsys.Errno {
	// As DirFS: an absolute target is refused (it would be resolved against
	// the host's root; here it would only fail when followed).
	if path.IsAbs(oldPath) {
		return experimentalsys.EPERM
	}
	p, errno := m.lastPath(linkName, experimentalsys.EEXIST) // as symlink(2)
	if errno != 0 {
		return errno
	}
	// The target is data the file system keeps (up to 4 KiB, often in a
	// block of its own): charged as bytes written, given back on failure.
	n := int64(len(oldPath))
	if !m.shared.chargeBytes(n) {
		return errNoSpace
	}
	errno = m.charged(func() experimentalsys.Errno { return mountErrno(m.ops.symlink(oldPath, p)) })
	if errno != 0 {
		m.shared.refundBytes(n)
	}
	return errno
}

// Readlink implements experimentalsys.FS.
func (m *FS) Readlink(path string) (string, experimentalsys.Errno) {
	p, errno := m.path(path)
	if errno != 0 {
		return "", errno
	}
	dst, err := m.ops.readlink(p)
	return dst, mountErrno(err)
}

// Utimens implements experimentalsys.FS.
func (m *FS) Utimens(path string, atim, mtim int64) experimentalsys.Errno {
	p, errno := m.path(path)
	if errno != 0 {
		return errno
	}
	// As DirFS: when both are omitted, there is nothing to do.
	if atim == experimentalsys.UTIME_OMIT && mtim == experimentalsys.UTIME_OMIT {
		return 0
	}
	// os.Root.Chtimes leaves a zero time.Time unchanged (UTIME_OMIT) and
	// keeps nanoseconds; no int64 of nanoseconds is the zero time.
	toTime := func(ns int64) time.Time {
		if ns == experimentalsys.UTIME_OMIT {
			return time.Time{}
		}
		return time.Unix(0, ns)
	}
	return mountErrno(m.root.Chtimes(p, toTime(atim), toTime(mtim)))
}

// cleanMountPath checks a path given to the mount and cleans its ".."
// components. A leading slash is dropped (DirFS also reads "/a" as "a"),
// and "" is the mount itself. A path with no ".." is returned as it is
// (wazero passes paths relative to the mount, cleaned, "." for the mount
// itself, and possibly a trailing slash, kept: it means "must be a
// directory").
//
// A path with ".." components is cleaned lexically against the mount's
// root, never by following ".." on the host: "a/../b" is "b", "a/b/.." is
// "a/." and "a/.." is "."; a ".." that would climb above the root ("..",
// "../x", "a/../..") is refused with EPERM, the errno wazero gives a
// guest's path with a ".." (the root's ".." is not the root: the mount
// has no parent the guest may name). A last "." or ".." stays a last "."
// ("a/." is a's directory itself, and the *at calls see a name that is
// not a plain entry). dirs are the prefixes a ".." climbed out of ("a",
// "a/b"): the kernel would have looked them up, so FS.path checks that
// they are directories, beneath the mount, and fails as the kernel would
// (ENOENT, ENOTDIR, ELOOP, or EPERM for one that leads out). A symlink
// before a ".." is resolved only for that check: "link/.." is the
// directory the path names ("."), not the symlink target's parent, as
// wazero's own path.Clean of a guest's path has it.
func cleanMountPath(p string) (clean string, dirs []string, errno experimentalsys.Errno) {
	p = strings.TrimLeft(p, "/")
	if p == "" {
		return ".", nil, 0
	}
	if !hasDotDot(p) {
		return p, nil, 0
	}
	var stack []string
	last := ""
	for rest := p; rest != ""; {
		var elem string
		elem, rest, _ = strings.Cut(rest, "/")
		switch elem {
		case "":
			continue
		case ".":
			last = "."
			continue
		case "..":
			if len(stack) == 0 {
				return "", nil, experimentalsys.EPERM
			}
			if last != ".." { // "a/b/../.." needs only "a/b" checked
				dirs = append(dirs, strings.Join(stack, "/"))
			}
			stack = stack[:len(stack)-1]
		default:
			stack = append(stack, elem)
		}
		last = elem
	}
	clean = strings.Join(stack, "/")
	switch {
	case last == "." || last == "..":
		if clean == "" {
			return ".", dirs, 0
		}
		return clean + "/.", dirs, 0
	case clean == "":
		return ".", dirs, 0
	case strings.HasSuffix(p, "/"):
		return clean + "/", dirs, 0
	}
	return clean, dirs, 0
}

// hasDotDot reports whether p has a ".." component.
func hasDotDot(p string) bool {
	for rest := p; rest != ""; {
		var elem string
		elem, rest, _ = strings.Cut(rest, "/")
		if elem == ".." {
			return true
		}
	}
	return false
}

// lastIsDotDot reports whether the last component of p is "..".
func lastIsDotDot(p string) bool {
	p = strings.TrimRight(p, "/")
	return p == ".." || strings.HasSuffix(p, "/..")
}

// path is cleanMountPath of p, with its dirs checked: each must be a
// directory beneath the mount (a last symlink followed), else the error
// the kernel would give for a lookup through it.
func (m *FS) path(p string) (string, experimentalsys.Errno) {
	clean, dirs, errno := cleanMountPath(p)
	if errno != 0 {
		return "", errno
	}
	for _, d := range dirs {
		st, err := m.ops.stat(d)
		if err != nil {
			return "", mountErrno(err)
		}
		if !st.Mode.IsDir() {
			return "", experimentalsys.ENOTDIR
		}
	}
	return clean, 0
}

// lastPath is path for an operation that makes, removes or renames the
// last component of p: when that is "..", which names no entry the
// operation could act on, it fails with errno (the kernel's for that
// operation) once the rest of the path resolves.
func (m *FS) lastPath(p string, errno experimentalsys.Errno) (string, experimentalsys.Errno) {
	clean, e := m.path(p)
	if e != 0 {
		return "", e
	}
	if lastIsDotDot(p) {
		return "", errno
	}
	return clean, 0
}

// splitMountPath splits a path from cleanMountPath into its directory
// (or "."), its last component without slashes, and that component as the
// *at calls should see it (with the path's trailing slash, if any).
func splitMountPath(p string) (dir, base, baseArg string, slash bool) {
	trimmed := strings.TrimRight(p, "/")
	slash = len(trimmed) < len(p)
	if trimmed == "" { // cannot happen after cleanMountPath; be safe
		return ".", ".", ".", false
	}
	dir, base = ".", trimmed
	if i := strings.LastIndexByte(trimmed, '/'); i >= 0 {
		dir, base = trimmed[:i+1], trimmed[i+1:]
	}
	baseArg = base
	if slash {
		baseArg = base + "/"
	}
	return dir, base, baseArg, slash
}

// mountErrno maps an error of the mount to an Errno, as DirFS maps its
// own (experimentalsys.UnwrapOSError), except that escapes are EPERM: the
// openat2 ones (errEscape) and os.Root's, which are the errors it returns
// that are not errnos ("path escapes from parent", and the like).
func mountErrno(err error) experimentalsys.Errno {
	if err == nil {
		return 0
	}
	if isEscape(err) {
		return experimentalsys.EPERM
	}
	return experimentalsys.UnwrapOSError(err)
}

// isEscape reports whether err says a path leads out of the mount.
func isEscape(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, errEscape) {
		return true
	}
	inner := err
	switch e := err.(type) {
	case *os.PathError:
		inner = e.Err
	case *os.LinkError:
		inner = e.Err
	case *os.SyscallError:
		inner = e.Err
	}
	switch inner.(type) {
	case syscall.Errno, experimentalsys.Errno:
		return false
	}
	switch inner {
	case fs.ErrNotExist, fs.ErrExist, fs.ErrPermission, fs.ErrInvalid, fs.ErrClosed:
		return false
	}
	return true
}

// rootOps resolves paths with os.Root alone. Where os.Root has no
// operation with the kernel's semantics, it checks first with Lstat, which
// a concurrent change may outdate; the operation then acts on the wrong
// file, but always one beneath the root. Differences from DirFS: at most 8
// symlinks are followed (the kernel: 40); a rename onto an empty
// directory removes it first (not atomic).
type rootOps struct {
	root *os.Root
}

func (r rootOps) open(p string, flag int, perm fs.FileMode) (*os.File, error) {
	if flag&syscall.O_NOFOLLOW != 0 && !strings.HasSuffix(p, "/") {
		// os.Root always follows a last symlink (beneath the root): O_NOFOLLOW
		// must fail on one, with ELOOP, or EEXIST for O_CREAT|O_EXCL.
		if fi, err := r.root.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			switch {
			case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
				return nil, syscall.EEXIST
			case flag&syscall.O_DIRECTORY != 0:
				return nil, syscall.ENOTDIR
			}
			return nil, syscall.ELOOP
		}
	}
	f, err := r.root.OpenFile(p, flag|syscall.O_NONBLOCK, fileModePerm(perm)) // never block: see checkOpened
	if err != nil {
		return nil, openErr(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := checkOpened(uint32(st.Mode), int(f.Fd()), flag); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// checkOpened refuses, with ENOTSUP, a file opened in a mount that is not
// a regular file or a directory: a FIFO, a socket or a device node the
// host left there. Mounts open every file with O_NONBLOCK, so that open(2)
// of a FIFO returns at once instead of waiting for a writer (outside any
// context: the run could only be abandoned); checkOpened then refuses it,
// so that no read or write on it can wait either. For the files it keeps,
// it clears O_NONBLOCK again unless the guest asked for it (flag).
func checkOpened(mode uint32, fd int, flag int) error {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFREG, syscall.S_IFDIR:
	default:
		return syscall.ENOTSUP
	}
	if flag&syscall.O_NONBLOCK == 0 {
		return syscall.SetNonblock(fd, false)
	}
	return nil
}

// openErr maps what open(2) with O_NONBLOCK says of a special file: ENXIO
// (a FIFO with no reader opened for writing, a socket, a device with no
// driver) is the ENOTSUP of checkOpened.
func openErr(err error) error {
	if errors.Is(err, syscall.ENXIO) {
		return syscall.ENOTSUP
	}
	return err
}

func (r rootOps) lstat(p string) (sys.Stat_t, error) {
	fi, err := r.root.Lstat(p)
	if err != nil {
		return sys.Stat_t{}, err
	}
	return sys.NewStat_t(fi), nil
}

func (r rootOps) stat(p string) (sys.Stat_t, error) {
	fi, err := r.root.Stat(p)
	if err != nil {
		return sys.Stat_t{}, err
	}
	return sys.NewStat_t(fi), nil
}

func (r rootOps) mkdir(p string, perm fs.FileMode) error {
	return r.root.Mkdir(p, fileModePerm(perm))
}

func (r rootOps) rename(from, to string) error {
	// The kernel refuses to rename "dir/." or onto it.
	if path.Base(from) == "." || path.Base(to) == "." {
		return syscall.EBUSY
	}
	// A trailing slash asks for a directory, and (unlike os.Root's) the
	// kernel's rename does not follow a symlink for it.
	if strings.HasSuffix(from, "/") || strings.HasSuffix(to, "/") {
		from, to = strings.TrimRight(from, "/"), strings.TrimRight(to, "/")
		if err := r.lstatDir(from); err != nil {
			return err
		}
	}
	// The kernel replaces an empty directory with a directory, and refuses
	// a file onto a directory with EISDIR; os.Root refuses both with EEXIST.
	if tfi, err := r.root.Lstat(to); err == nil && tfi.IsDir() {
		ffi, err := r.root.Lstat(from)
		switch {
		case err != nil:
			return err
		case !ffi.IsDir():
			return syscall.EISDIR
		case !os.SameFile(ffi, tfi):
			if err := r.rmdir(to); err != nil {
				return err
			}
		}
	}
	return r.root.Rename(from, to)
}

// lstatDir checks that p, not followed, is a directory.
func (r rootOps) lstatDir(p string) error {
	fi, err := r.root.Lstat(p)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return syscall.ENOTDIR
	}
	return nil
}

func (r rootOps) rmdir(p string) error {
	// The last component is never followed, even with a trailing slash.
	p = strings.TrimRight(p, "/")
	if err := r.lstatDir(p); err != nil {
		return err
	}
	return r.root.Remove(p)
}

func (r rootOps) unlink(p string) error {
	// The last component is never followed, even with a trailing slash
	// (which a file or a symlink fails with ENOTDIR).
	trimmed := strings.TrimRight(p, "/")
	fi, err := r.root.Lstat(trimmed)
	switch {
	case err != nil:
		return err
	case fi.IsDir():
		return syscall.EISDIR
	case trimmed != p:
		return syscall.ENOTDIR
	}
	return r.root.Remove(trimmed)
}

func (r rootOps) link(oldPath, newPath string) error {
	return r.root.Link(oldPath, newPath)
}

func (r rootOps) symlink(target, linkPath string) error {
	return r.root.Symlink(target, linkPath)
}

func (r rootOps) readlink(p string) (string, error) {
	return r.root.Readlink(p)
}

func (r rootOps) close() error { return nil }

// fileModePerm keeps the bits of perm os.Root accepts.
func fileModePerm(perm fs.FileMode) fs.FileMode { return perm & fs.ModePerm }

// toOsOpenFlag converts the input to the flag parameter of os.OpenFile.
// Adapted from wazero's internal/sysfs (Apache-2.0).
func toOsOpenFlag(oflag experimentalsys.Oflag) (flag int) {
	// First flags are exclusive
	switch oflag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY) {
	case experimentalsys.O_RDONLY:
		flag |= os.O_RDONLY
	case experimentalsys.O_RDWR:
		flag |= os.O_RDWR
	case experimentalsys.O_WRONLY:
		flag |= os.O_WRONLY
	}

	// Run down the flags defined in the os package, then those it has
	// no name for.
	return withSyscallOflag(oflag, addOflags(flag, oflag, osOflags))
}

// An oflagBit is a wazero open flag and the flag of os.OpenFile it
// stands for.
type oflagBit struct {
	oflag experimentalsys.Oflag
	flag  int
}

// osOflags are the open flags the os package names.
var osOflags = []oflagBit{
	{experimentalsys.O_APPEND, os.O_APPEND},
	{experimentalsys.O_CREAT, os.O_CREATE},
	{experimentalsys.O_EXCL, os.O_EXCL},
	{experimentalsys.O_SYNC, os.O_SYNC},
	{experimentalsys.O_TRUNC, os.O_TRUNC},
}

// addOflags adds to flag the flag of each of bits set in oflag.
func addOflags(flag int, oflag experimentalsys.Oflag, bits []oflagBit) int {
	for _, b := range bits {
		if oflag&b.oflag != 0 {
			flag |= b.flag
		}
	}
	return flag
}

// statFromUnix converts what fstatat(2) returns as sys.NewStat_t converts
// the os.FileInfo of os.Lstat (DirFS's stat), file mode included.
// Times are in nanoseconds since the epoch.
func statFromUnix(mode uint32, dev, ino, nlink uint64, size, atim, mtim, ctim int64) sys.Stat_t {
	m := fs.FileMode(mode & 0o777)
	switch mode & syscall.S_IFMT {
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	}
	for _, b := range modeBits {
		if mode&b.sys != 0 {
			m |= b.mode
		}
	}
	return sys.Stat_t{
		Dev: dev, Ino: ino, Mode: m, Nlink: nlink, Size: size,
		Atim: atim, Mtim: mtim, Ctim: ctim,
	}
}

// syscallMode is the mode bits of perm for mkdir(2) and open(2), as the
// os package computes them.
func syscallMode(perm fs.FileMode) uint32 {
	o := uint32(perm.Perm())
	for _, b := range modeBits {
		if perm&b.mode != 0 {
			o |= b.sys
		}
	}
	return o
}

// modeBits pairs the set-user-ID, set-group-ID and sticky bits of a
// FileMode with those of a mode in system calls.
var modeBits = []struct {
	mode fs.FileMode
	sys  uint32
}{
	{fs.ModeSetuid, syscall.S_ISUID},
	{fs.ModeSetgid, syscall.S_ISGID},
	{fs.ModeSticky, syscall.S_ISVTX},
}
