//go:build unix

package mountfs

// mountFile is adapted from wazero v1.12.0's internal/sysfs osFile
// (osfile.go, file.go, dir.go, poll.go; Copyright 2020-2023 wazero
// authors, Apache License 2.0), so that a file opened in a mount behaves
// exactly as one opened by wazero's DirFS. The one change: the file is
// reopened (to rewind a directory, or to change O_APPEND) through the
// mount, beneath its directory, not by its host path.

import (
	"io"
	"io/fs"
	"os"
	"syscall"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
	"golang.org/x/sys/unix"
)

func newMountFile(m *FS, path string, flag experimentalsys.Oflag, perm fs.FileMode, f *os.File) experimentalsys.File {
	// On POSIX, if a file is removed from or added to the directory after the
	// most recent call to opendir() or rewinddir(), whether a subsequent call
	// to readdir() returns an entry for that file is unspecified.
	//
	// So there is no guarantee that files added after opendir() will be visible
	// in readdir(). Since we want those files to be visible, we need to
	// reopendir() to get the new state of the directory before readdir().
	return &mountFile{fs: m, path: path, flag: flag, perm: perm, reopenDir: true, file: f, fd: f.Fd(), known: -1}
}

// mountFile is a file opened in an FS; it implements
// experimentalsys.PollableFile with os.File and system calls.
type mountFile struct {
	fs      *FS
	path    string // relative to the mount, for reopen
	preopen bool   // wazero's open of the mount's directory for its preopen
	flag    experimentalsys.Oflag
	perm    fs.FileMode
	file    *os.File
	fd      uintptr

	// reopenDir is true if reopen should be called before Readdir. This flag
	// is deferred until Readdir to prevent redundant rewinds. This could
	// happen if Seek(0) was called twice.
	reopenDir bool

	// closed is true when closed was called. This ensures proper EBADF.
	closed bool

	// cachedSt includes fields that won't change while a file is open.
	cachedSt *cachedStat

	// known is the file's size as this open file knows it, for the disk
	// budget (mountfile_budget.go): read at the first write, then grown by
	// every write and set by every truncate. -1: not read yet.
	known int64
}

type cachedStat struct {
	dev   uint64    // as sys.Stat_t Dev
	ino   sys.Inode // as sys.Stat_t Ino
	isDir bool      // sys.Stat_t Mode masked with fs.ModeDir
}

// cachedStat returns the cacheable parts of sys.Stat_t or an error if they
// couldn't be retrieved.
func (f *mountFile) cachedStat() (dev uint64, ino sys.Inode, isDir bool, errno experimentalsys.Errno) {
	if f.cachedSt == nil {
		if _, errno = f.Stat(); errno != 0 {
			return
		}
	}
	return f.cachedSt.dev, f.cachedSt.ino, f.cachedSt.isDir, 0
}

// Dev implements the same method as documented on sys.File
func (f *mountFile) Dev() (uint64, experimentalsys.Errno) {
	dev, _, _, errno := f.cachedStat()
	return dev, errno
}

// Ino implements the same method as documented on sys.File
func (f *mountFile) Ino() (sys.Inode, experimentalsys.Errno) {
	_, ino, _, errno := f.cachedStat()
	return ino, errno
}

// IsDir implements the same method as documented on sys.File
func (f *mountFile) IsDir() (bool, experimentalsys.Errno) {
	_, _, isDir, errno := f.cachedStat()
	return isDir, errno
}

// IsAppend implements File.IsAppend
func (f *mountFile) IsAppend() bool {
	return f.flag&experimentalsys.O_APPEND == experimentalsys.O_APPEND
}

// SetAppend implements the same method as documented on sys.File
func (f *mountFile) SetAppend(enable bool) (errno experimentalsys.Errno) {
	if enable {
		f.flag |= experimentalsys.O_APPEND
	} else {
		f.flag &= ^experimentalsys.O_APPEND
	}

	// appendMode cannot be changed later, so we have to re-open the file
	// https://github.com/golang/go/blob/go1.24.0/src/os/file_unix.go#L65
	return fileError(f, f.closed, f.reopen())
}

func (f *mountFile) reopen() (errno experimentalsys.Errno) {
	var (
		isDir  bool
		offset int64
		err    error
	)

	isDir, errno = f.IsDir()
	if errno != 0 {
		return errno
	}

	if !isDir {
		offset, err = f.file.Seek(0, io.SeekCurrent)
		if err != nil {
			return experimentalsys.UnwrapOSError(err)
		}
	}

	// Clear any create or trunc flag, as we are re-opening, not re-creating.
	flag := f.flag &^ (experimentalsys.O_CREAT | experimentalsys.O_TRUNC)
	file, errno := f.fs.reopen(f.path, flag, f.perm)
	if errno != 0 {
		return errno
	}
	errno = f.checkSameFile(file)
	if errno != 0 {
		_ = file.Close()
		return errno
	}

	if !isDir {
		_, err = file.Seek(offset, io.SeekStart)
		if err != nil {
			_ = file.Close()
			return experimentalsys.UnwrapOSError(err)
		}
	}

	// Only update f on success.
	_ = f.file.Close()
	f.file = file
	f.fd = file.Fd()
	return 0
}

func (f *mountFile) checkSameFile(osf *os.File) experimentalsys.Errno {
	fi1, err := f.file.Stat()
	if err != nil {
		return experimentalsys.UnwrapOSError(err)
	}
	fi2, err := osf.Stat()
	if err != nil {
		return experimentalsys.UnwrapOSError(err)
	}
	if os.SameFile(fi1, fi2) {
		return 0
	}
	return experimentalsys.ENOENT
}

// IsNonblock implements the same method as documented on experimentalsys.PollableFile
func (f *mountFile) IsNonblock() bool {
	return f.flag&experimentalsys.O_NONBLOCK == experimentalsys.O_NONBLOCK
}

// SetNonblock implements the same method as documented on experimentalsys.PollableFile
func (f *mountFile) SetNonblock(enable bool) (errno experimentalsys.Errno) {
	if enable {
		f.flag |= experimentalsys.O_NONBLOCK
	} else {
		f.flag &= ^experimentalsys.O_NONBLOCK
	}
	if errno = experimentalsys.UnwrapOSError(syscall.SetNonblock(int(f.fd), enable)); errno != 0 {
		return fileError(f, f.closed, errno)
	}
	return 0
}

// Stat implements the same method as documented on sys.File
func (f *mountFile) Stat() (sys.Stat_t, experimentalsys.Errno) {
	if f.closed {
		return sys.Stat_t{}, experimentalsys.EBADF
	}

	var st sys.Stat_t
	info, err := f.file.Stat()
	errno := experimentalsys.UnwrapOSError(err)
	if errno == 0 {
		st = sys.NewStat_t(info)
	}
	switch errno {
	case 0:
		f.cachedSt = &cachedStat{dev: st.Dev, ino: st.Ino, isDir: st.Mode&fs.ModeDir == fs.ModeDir}
	case experimentalsys.EIO:
		errno = experimentalsys.EBADF
	}
	return st, errno
}

// ioErrno is err of an operation on the file as an Errno, checked
// against the file's state (fileError) when it is one.
func (f *mountFile) ioErrno(err error) experimentalsys.Errno {
	errno := experimentalsys.UnwrapOSError(err)
	if errno != 0 {
		// Defer validation overhead until we've already had an error.
		errno = fileError(f, f.closed, errno)
	}
	return errno
}

// nonblockIO is read(2), or write(2) if write, of buf on the
// non-blocking file's descriptor; n is 0 on an error, where the call
// says -1.
func (f *mountFile) nonblockIO(buf []byte, write bool) (n int, errno experimentalsys.Errno) {
	var err error
	if write {
		n, err = syscall.Write(int(f.fd), buf)
	} else {
		n, err = syscall.Read(int(f.fd), buf)
	}
	if n < 0 {
		n = 0
	}
	return n, experimentalsys.UnwrapOSError(err)
}

// Read implements the same method as documented on sys.File
func (f *mountFile) Read(buf []byte) (n int, errno experimentalsys.Errno) {
	if len(buf) == 0 {
		return 0, 0 // Short-circuit 0-len reads.
	}
	if f.IsNonblock() {
		return f.nonblockIO(buf, false)
	}
	n, err := f.file.Read(buf)
	return n, f.ioErrno(err)
}

// Pread implements the same method as documented on sys.File
func (f *mountFile) Pread(buf []byte, off int64) (n int, errno experimentalsys.Errno) {
	if len(buf) == 0 {
		return 0, 0 // less overhead on zero-length reads.
	}
	n, err := f.file.ReadAt(buf, off)
	return n, f.ioErrno(err)
}

// fileOffset is int64: sys.File's Seek returns an Errno, not io.Seeker's
// error, and go vet checks a Seek whose offset is spelled int64.
type fileOffset = int64

// Seek implements the same method as documented on sys.File
func (f *mountFile) Seek(offset fileOffset, whence int) (newOffset int64, errno experimentalsys.Errno) {
	if uint(whence) > io.SeekEnd {
		return 0, experimentalsys.EINVAL // negative or exceeds the largest valid whence
	}
	newOffset, err := f.file.Seek(offset, whence)
	if errno = f.ioErrno(err); errno != 0 {
		// If the error was trying to rewind a directory, re-open it.
		if errno == experimentalsys.EISDIR && offset == 0 && whence == io.SeekStart {
			errno = 0
			f.reopenDir = true
		}
	}
	return
}

// Poll implements the same method as documented on experimentalsys.Pollable
func (f *mountFile) Poll(flag experimentalsys.Pflag, timeoutMillis int32) (ready bool, errno experimentalsys.Errno) {
	if flag != experimentalsys.POLLIN {
		return false, experimentalsys.ENOTSUP
	}
	fds := []unix.PollFd{{Fd: int32(f.fd), Events: unix.POLLIN}}
	count, err := unix.Poll(fds, int(timeoutMillis))
	return count > 0, experimentalsys.UnwrapOSError(err)
}

// Readdir implements File.Readdir. Notably, this uses "Readdir", not
// "ReadDir", from os.File.
func (f *mountFile) Readdir(n int) (dirents []experimentalsys.Dirent, errno experimentalsys.Errno) {
	if f.reopenDir { // re-open the directory if needed.
		f.reopenDir = false
		if errno = adjustReaddirErr(f, f.closed, f.reopen()); errno != 0 {
			return
		}
	}

	fis, err := f.file.Readdir(n)
	if errno = adjustReaddirErr(f, f.closed, err); errno != 0 {
		return
	}
	dirents = make([]experimentalsys.Dirent, 0, len(fis))
	for _, t := range fis {
		var ino sys.Inode
		if st, ok := t.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
		dirents = append(dirents, experimentalsys.Dirent{Name: t.Name(), Ino: ino, Type: t.Mode().Type()})
	}
	return
}

// Write implements the same method as documented on sys.File
func (f *mountFile) Write(buf []byte) (n int, errno experimentalsys.Errno) {
	if len(buf) == 0 {
		return 0, 0 // Short-circuit 0-len writes.
	}
	off, cost, errno := f.chargeWrite(-1, len(buf))
	if errno != 0 {
		return 0, errno
	}
	defer func() { f.settle(off, cost, len(buf), n) }()
	if f.IsNonblock() {
		return f.nonblockIO(buf, true)
	}
	n, err := f.file.Write(buf)
	return n, f.ioErrno(err)
}

// Pwrite implements the same method as documented on sys.File
func (f *mountFile) Pwrite(buf []byte, off int64) (n int, errno experimentalsys.Errno) {
	if len(buf) == 0 {
		return 0, 0 // less overhead on zero-length writes.
	}
	_, cost, errno := f.chargeWrite(off, len(buf))
	if errno != 0 {
		return 0, errno
	}
	defer func() { f.settle(off, cost, len(buf), n) }()
	n, err := f.file.WriteAt(buf, off)
	return n, f.ioErrno(err)
}

// Truncate implements the same method as documented on sys.File
func (f *mountFile) Truncate(size int64) (errno experimentalsys.Errno) {
	if size < 0 {
		return experimentalsys.EINVAL
	}
	cost, errno := f.chargeTruncate(size)
	if errno != 0 {
		return errno
	}
	if errno = f.ioErrno(f.file.Truncate(size)); errno != 0 {
		f.fs.shared.refundBytes(cost)
		return errno
	}
	if cost >= 0 && f.known >= 0 {
		f.known = size
	}
	return
}

// Sync implements the same method as documented on sys.File
func (f *mountFile) Sync() experimentalsys.Errno {
	return experimentalsys.UnwrapOSError(f.file.Sync())
}

// Datasync implements the same method as documented on sys.File
func (f *mountFile) Datasync() experimentalsys.Errno {
	return datasync(f.file)
}

// Utimens implements the same method as documented on sys.File
func (f *mountFile) Utimens(atim, mtim int64) experimentalsys.Errno {
	if f.closed {
		return experimentalsys.EBADF
	}
	return futimens(f.fd, atim, mtim)
}

// Close implements the same method as documented on sys.File
func (f *mountFile) Close() experimentalsys.Errno {
	if f.closed {
		return 0
	}
	f.closed = true
	f.fs.shared.files.release()
	if f.preopen {
		f.fs.shared.preopens.Add(-1)
	}
	return experimentalsys.UnwrapOSError(f.file.Close())
}

// adjustReaddirErr maps an error of Readdir to the errors sys.File allows.
func adjustReaddirErr(f experimentalsys.File, isClosed bool, err error) experimentalsys.Errno {
	if err == io.EOF {
		return 0 // e.g. Readdir on darwin returns io.EOF, but linux doesn't.
	} else if errno := experimentalsys.UnwrapOSError(err); errno != 0 {
		errno = dirError(f, isClosed, errno)
		// Comply with errors allowed on sys.File Readdir
		switch errno {
		case experimentalsys.EINVAL: // os.File Readdir can return this
			return experimentalsys.EBADF
		case experimentalsys.ENOTDIR: // dirError can return this
			return experimentalsys.EBADF
		}
		return errno
	}
	return 0
}

// dirError is used for commands that work against a directory, but not a file.
func dirError(f experimentalsys.File, isClosed bool, errno experimentalsys.Errno) experimentalsys.Errno {
	if vErrno := validate(f, isClosed, false, true); vErrno != 0 {
		return vErrno
	}
	return errno
}

// fileError is used for commands that work against a file, but not a directory.
func fileError(f experimentalsys.File, isClosed bool, errno experimentalsys.Errno) experimentalsys.Errno {
	if vErrno := validate(f, isClosed, true, false); vErrno != 0 {
		return vErrno
	}
	return errno
}

// validate is used to making syscalls which will fail.
func validate(f experimentalsys.File, isClosed, wantFile, wantDir bool) experimentalsys.Errno {
	if isClosed {
		return experimentalsys.EBADF
	}

	isDir, errno := f.IsDir()
	if errno != 0 {
		return errno
	}

	if wantFile && isDir {
		return experimentalsys.EISDIR
	} else if wantDir && !isDir {
		return experimentalsys.ENOTDIR
	}
	return 0
}
