package batch

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// unnamed is an output written to an unnamed file (O_TMPFILE), not yet
// durable and not yet named: a bare descriptor (-1: none), without
// os.File's fcntl, allocation and finalizer per file.
type unnamed struct {
	fd int
}

// writeGroupLinked writes each file as an unnamed file in the folder
// (O_TMPFILE), makes the group's data durable with one barrier (one
// syncfs(2) of the folder's file system where it is honoured, else an
// fsync of each file), and only then gives each its name (linkat): a name
// appears with the whole, durable content, or not at all, as with a
// temporary file and a rename, but with one change to the folder instead
// of three (create, rename, and the temporary name's removal), and
// nothing left behind by a kill. A name that exists is replaced by a
// rename from a temporary name. The caller fsyncs the folder once for the
// names. errs[i] is errNoLink for a file this system cannot write so (no
// O_TMPFILE on the file system, no /proc): the caller writes a named
// temporary file instead.
func (o *outDir) writeGroupLinked(files []outputFile) []error {
	errs := make([]error, len(files))
	us := make([]unnamed, len(files))
	// The folder is opened for syncfs before the group's files are
	// written: syncfs reports, through this descriptor, every writeback
	// error on the file system since it was opened, so any error on this
	// group's data (and perhaps some of another program's). A descriptor
	// of its own, not one shared with the other writer: an error one
	// writer's syncfs reported would not be reported to the other's again.
	// It is also the folder the names are given in (linkat relative to
	// it: one path component to resolve, not the folder's whole path).
	dirFD, err := openSyncfsFD(o.fd)
	if err != nil {
		dirFD = -1
	} else {
		defer func() { _ = closeSyncfsFD(dirFD) }()
	}
	for i := range us {
		us[i].fd = -1
	}
	defer func() {
		for _, u := range us {
			if u.fd >= 0 {
				_ = unix.Close(u.fd) // an unlinked file goes with its close
			}
		}
	}()
	live := 0
	for i, file := range files {
		fd, err := unix.Openat(o.fd, ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uint32(file.perm.Perm()))
		if err != nil {
			if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL) {
				errs[i] = errNoLink
			} else {
				errs[i] = &os.PathError{Op: "open", Path: o.dir, Err: err}
			}
			continue
		}
		us[i].fd = fd
		if err := writeFD(fd, file.data); err != nil {
			errs[i] = &os.PathError{Op: "write", Path: o.dir, Err: err}
			continue
		}
		live++
	}
	if live == 0 {
		return errs
	}
	// The barrier: no name is given before its data is durable.
	if !o.syncGroup(dirFD) {
		for i, u := range us {
			if errs[i] == nil {
				if err := ignoringEINTR(func() error { return unix.Fsync(u.fd) }); err != nil {
					errs[i] = &os.PathError{Op: "sync", Path: o.dir, Err: err}
				}
			}
		}
	}
	for i, file := range files {
		if errs[i] == nil {
			errs[i] = o.link(us[i].fd, dirFD, file.name)
		}
	}
	return errs
}

// writeFD writes data whole to the descriptor fd.
func writeFD(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		case n == 0:
			return io.ErrShortWrite
		}
		data = data[n:]
	}
	return nil
}

// syncGroup makes durable, with one syncfs(2) of the folder's file system
// through fd (the folder, opened before the group was written), every
// file written in the folder before it is called. False when the batch
// does not use syncfs (fd < 0), or when syncfs reported an error (a
// writeback error on the file system since fd was opened, which may be
// another file's): the caller then fsyncs each file, which reports that
// file's own errors.
func (o *outDir) syncGroup(fd int) bool {
	if fd < 0 || o.syncfs == nil {
		return false
	}
	o.syncfsCalls.Add(1)
	return o.syncfs(fd) == nil
}

// syncfsCall is syncfs(2).
func syncfsCall(fd int) error { return unix.Syncfs(fd) }

// link gives the unnamed file fd its name in the folder, through dirFD
// (the folder; -1: through the folder's own descriptor): linkat of the
// descriptor (AT_EMPTY_PATH) where the kernel allows it, else of its
// /proc/self/fd path. An existing name (even a link) is replaced, never
// written through.
func (o *outDir) link(fd, dirFD int, name string) error {
	src := "/proc/self/fd/" + strconv.Itoa(fd)
	final := filepath.Join(o.dir, name)
	if dirFD < 0 {
		dirFD = o.fd
	}
	linkat := func(newName string) error {
		// The descriptor itself (AT_EMPTY_PATH): no path through /proc
		// to resolve, about a fifth of linkat's CPU for a small file.
		// Linux allows it with CAP_DAC_READ_SEARCH, and newer kernels
		// for a file the caller opened itself (6.18 did for nobody).
		// Refused once (ENOENT), it is not tried again.
		if !o.noEmptyPath.Load() {
			err := unix.Linkat(fd, "", dirFD, newName, unix.AT_EMPTY_PATH)
			if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EINVAL) {
				return err
			}
			o.noEmptyPath.Store(true)
		}
		return unix.Linkat(unix.AT_FDCWD, src, dirFD, newName, unix.AT_SYMLINK_FOLLOW)
	}
	err := linkat(name)
	if errors.Is(err, unix.EEXIST) { // replace it: link under a temporary name, rename over
		tmp := filepath.Base(o.tempName(name))
		if err = linkat(tmp); err == nil {
			if err = unix.Renameat(dirFD, tmp, dirFD, name); err != nil {
				_ = unix.Unlinkat(dirFD, tmp, 0)
				return &os.LinkError{Op: "rename", Old: tmp, New: final, Err: err}
			}
			return nil
		}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EXDEV):
		return errNoLink // no /proc, or linking refused: the unnamed file goes with its close
	default:
		return &os.LinkError{Op: "linkat", Old: src, New: final, Err: err}
	}
}

// syncfsHonoured says whether syncfs(2) on the folder dir makes the data
// of every file written there before the call durable, and reports a
// writeback error: Linux 5.8 or later (before 5.8 syncfs did not report
// writeback errors), on a local file system whose sync_fs waits for the
// data and commits its journal (ext2/3/4, xfs, btrfs, f2fs; tmpfs, where
// nothing is durable anyway). Elsewhere (FUSE, NFS and other network file
// systems, overlayfs...) it answers why not, and each file is fsynced.
func syncfsHonoured(dir string) (bool, string) {
	if !kernelAtLeast(5, 8) {
		return false, "kernel older than 5.8 (syncfs does not report writeback errors)"
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false, "statfs: " + err.Error()
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.F2FS_SUPER_MAGIC, unix.TMPFS_MAGIC:
		return true, ""
	}
	return false, "file system type 0x" + strconv.FormatUint(uint64(uint32(st.Type)), 16) + " is not one where syncfs is known to be honoured"
}

// kernelAtLeast reports whether the running kernel's release is at least
// major.minor.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	rel := unix.ByteSliceToString(u.Release[:])
	nums := [2]int{}
	k := 0
	for i := 0; i < len(rel) && k < 2; i++ {
		c := rel[i]
		switch {
		case c >= '0' && c <= '9':
			nums[k] = nums[k]*10 + int(c-'0')
		case c == '.':
			k++
		default:
			k = 2
		}
	}
	return nums[0] > major || nums[0] == major && nums[1] >= minor
}

// openSyncfsFD opens the folder (dir, its descriptor) again for syncfs:
// syncfs reports a writeback error that happened since its file
// descriptor was opened (and not yet reported to it), so it is opened
// before the files it is to cover are written; a new open file
// description each time, not a dup.
func openSyncfsFD(dir int) (int, error) {
	return unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

func closeSyncfsFD(fd int) error { return unix.Close(fd) }
