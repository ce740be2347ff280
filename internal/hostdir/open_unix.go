//go:build unix

package hostdir

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// fileID is a directory's identity: device and inode.
type fileID struct{ dev, ino uint64 }

// allowRoots are the allow-listed directories, by identity.
type allowRoots []fileID

// openAllowRoots resolves the entries of an allow-list as Resolve
// does and opens each as a mount is opened (openDirNoFollow), for its
// identity. An entry that does not resolve or open allows nothing.
func openAllowRoots(allow []string) allowRoots {
	out := make(allowRoots, 0, len(allow))
	for _, d := range allow {
		real, err := Resolve(d)
		if err != nil {
			continue
		}
		f, err := openDirNoFollow(real)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err == nil {
			out = append(out, idOf(&st))
		}
		_ = f.Close()
	}
	return out
}

func idOf(st *unix.Stat_t) fileID { return fileID{dev: uint64(st.Dev), ino: st.Ino} } //nolint:unconvert // Dev is int32 on some systems

func (r allowRoots) has(id fileID) bool {
	for _, x := range r {
		if x == id {
			return true
		}
	}
	return false
}

// maxMountDepth bounds the walk up from a mount's directory.
const maxMountDepth = 4096

// contain reports whether dir is one of the roots or lies beneath one:
// it walks up from dir through "..", the kernel's parent of each directory
// (not a path: no symlink is involved), to the file system's root.
func (r allowRoots) contain(dir *os.File) (bool, error) {
	if len(r) == 0 {
		return false, nil
	}
	cur, owned := int(dir.Fd()), false
	defer func() {
		if owned {
			_ = unix.Close(cur)
		}
	}()
	var st unix.Stat_t
	if err := unix.Fstat(cur, &st); err != nil {
		return false, err
	}
	for range maxMountDepth {
		id := idOf(&st)
		if r.has(id) {
			return true, nil
		}
		up, err := openatDir(cur, "..")
		if err != nil {
			return false, fmt.Errorf("walking up from the mount's directory: %w", err)
		}
		if owned {
			_ = unix.Close(cur)
		}
		cur, owned = up, true
		if err := unix.Fstat(cur, &st); err != nil {
			return false, err
		}
		if idOf(&st) == id { // ".." of the root is the root
			return false, nil
		}
	}
	return false, errors.New("the mount's directory is too deep")
}

// openDirNoFollow opens the directory at p, an absolute and clean path,
// without following a symlink in any component: one that is a symlink (or
// not a directory) fails with errPathChanged.
func openDirNoFollow(p string) (*os.File, error) {
	if f, ok, err := openat2NoSymlinks(p); ok {
		return f, err
	}
	return walkDirNoFollow(p)
}

// walkDirNoFollow opens p from "/" one component at a time, each with
// O_NOFOLLOW|O_DIRECTORY and checked to be a directory.
func walkDirNoFollow(p string) (*os.File, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%s: not an absolute path", p)
	}
	fd, err := openatDir(unix.AT_FDCWD, "/")
	if err != nil {
		return nil, err
	}
	for _, name := range strings.Split(p, "/") {
		if name == "" {
			continue
		}
		if name == "." || name == ".." {
			_ = unix.Close(fd)
			return nil, fmt.Errorf("%s: not a clean path", p)
		}
		next, err := openatDir(fd, name)
		_ = unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EMLINK) {
				return nil, errPathChanged
			}
			return nil, err
		}
		fd = next
	}
	return os.NewFile(uintptr(fd), p), nil
}

// openatDir opens name beneath dirfd as a directory, never following a
// last symlink, and checks that what it opened is a directory.
func openatDir(dirfd int, name string) (int, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Openat(dirfd, name, dirOpenFlags|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		_ = unix.Close(fd)
		return -1, unix.ENOTDIR
	}
	return fd, nil
}
