package tasks

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// GrantedMount is a mount as a runner grants it: its host directory held
// open. The directory was opened once, without following a symlink in any
// component of its resolved path, and the allow-list was checked on that
// descriptor (is it, or is it beneath, an allow-listed directory opened the
// same way: compared by device and inode, not by path). The sandbox mounts
// Dir itself and never opens HostPath again, so nothing that changes the
// path after the check (a directory renamed, a symlink put in its place by
// a guest with a writable mount) changes what is mounted.
type GrantedMount struct {
	// Mount is the task's mount, HostPath resolved (every symlink
	// followed) as it was when the directory was opened: for messages.
	Mount
	// Dir is the directory. The caller closes it (CloseMounts) once the
	// run is over; the sandbox makes its own descriptors from it.
	Dir *os.File
}

// OpenMounts opens and checks mounts against an allow-list, deny by
// default: each guest path must be absolute; each host path must exist, be
// a directory, and lie under an entry of allow. Symlinks the host path (or
// an entry of allow) names are resolved first, as for any path an operator
// types; the resolved path is then opened without following any symlink
// (Linux: openat2 with RESOLVE_NO_SYMLINKS; elsewhere component by
// component with O_NOFOLLOW), so a symlink put in the path after it was
// resolved makes the open fail rather than lead elsewhere. The allow-list
// test walks up from the opened directory through ".." and compares each
// ancestor's device and inode with those of the allow-listed directories,
// opened the same way.
//
// It returns the granted mounts, whose directories the caller closes
// (CloseMounts), or an error naming every mount refused (not wrapped in
// ErrInvalidSpec: callers say what it is), with nothing left open.
func OpenMounts(ms []Mount, allow []string) ([]GrantedMount, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	roots := allowRootsOf(allow)
	var errs []error
	out := make([]GrantedMount, 0, len(ms))
	for _, m := range ms {
		g, err := openMount(m, roots, allow)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, g)
	}
	if err := errors.Join(errs...); err != nil {
		_ = CloseMounts(out)
		return nil, err
	}
	return out, nil
}

// allowRootCache holds each allow-list's directories as first opened
// (allowRootsOf), by the list joined with NULs.
var allowRootCache sync.Map

// allowRootsOf returns the directories of allow, opened the first time
// this allow-list is used and kept for the life of the process once every
// entry opened: an entry nested in another, which a guest with a writable
// mount of the outer one could swap for a symlink, keeps the directory it
// named then (its device and inode), not whatever its path names later.
// An operator who replaces an allow-listed directory restarts the runner.
func allowRootsOf(allow []string) allowRoots {
	key := strings.Join(allow, "\x00")
	if r, ok := allowRootCache.Load(key); ok {
		return r.(allowRoots)
	}
	r := openAllowRoots(allow)
	if len(r) == len(allow) {
		allowRootCache.Store(key, r)
	}
	return r
}

// openMount opens and checks one mount (OpenMounts).
func openMount(m Mount, roots allowRoots, allow []string) (GrantedMount, error) {
	if !path.IsAbs(m.GuestPath) {
		return GrantedMount{}, fmt.Errorf("mount %s: guest path %q is not absolute", m.HostPath, m.GuestPath)
	}
	real, err := ResolveHostPath(m.HostPath)
	if err != nil {
		return GrantedMount{}, err
	}
	dir, err := openDirNoFollow(real)
	if err != nil {
		return GrantedMount{}, fmt.Errorf("mount %s: %w", m.HostPath, err)
	}
	ok, err := roots.contain(dir)
	if err != nil {
		_ = dir.Close()
		return GrantedMount{}, fmt.Errorf("mount %s: %w", m.HostPath, err)
	}
	if !ok {
		_ = dir.Close()
		via := ""
		if abs, err := filepath.Abs(m.HostPath); err != nil || abs != real {
			via = " (resolves to " + real + ")"
		}
		return GrantedMount{}, fmt.Errorf("mount %s%s is not under this runner's mounts.allow %v", m.HostPath, via, allowList(allow))
	}
	return GrantedMount{Mount: Mount{HostPath: real, GuestPath: m.GuestPath, Writable: m.Writable, Snapshots: m.Snapshots}, Dir: dir}, nil
}

// CloseMounts closes the directories of granted mounts.
func CloseMounts(ms []GrantedMount) error {
	var errs []error
	for _, m := range ms {
		if m.Dir != nil {
			errs = append(errs, m.Dir.Close())
		}
	}
	return errors.Join(errs...)
}

// errPathChanged is an open that met a symlink (or a file that is not a
// directory) in a path just resolved: it changed under the check.
var errPathChanged = errors.New("a component of the resolved host path is now a symlink or not a directory (it changed while the mount was checked)")
