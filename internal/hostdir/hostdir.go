package hostdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Dir is a host directory held open: opened once, without following a
// symlink in any component of its resolved path, and (Open) checked on
// that descriptor against an allow-list. Whatever mounts it uses File,
// never Path again, so nothing that changes the path after the check (a
// directory renamed, a symlink put in its place) changes what is mounted.
type Dir struct {
	// Path is the directory's real path (every symlink followed) as it
	// was when the directory was opened: for messages.
	Path string
	// File is the directory. Its holder closes it (Close) once done with
	// it; a sandbox makes descriptors of its own from it.
	File *os.File
}

// Close closes the directory (nothing when none is held).
func (d Dir) Close() error {
	if d.File == nil {
		return nil
	}
	return d.File.Close()
}

// Open opens the host directory p and checks it against an allow-list,
// deny by default: p must exist, be a directory, and lie under an entry
// of allow. Symlinks p (or an entry of allow) names are resolved first
// (Resolve), as for any path an operator types; the resolved path is then
// opened without following any symlink (Linux: openat2 with
// RESOLVE_NO_SYMLINKS; elsewhere component by component with O_NOFOLLOW),
// so a symlink put in the path after it was resolved makes the open fail
// rather than lead elsewhere. The allow-list test walks up from the
// opened directory through ".." and compares each ancestor's device and
// inode with those of the allow-listed directories, opened the same way
// the first time this allow-list is used and kept for the life of the
// process (allowRootsOf). The allow-list "/" allows every directory.
//
// Its errors name p as a mount's host path ("mount /srv/x: ..."), and a
// refusal says the allow-list is the runner's mounts.allow: every caller
// checks a mount against a runner's.
func Open(p string, allow []string) (Dir, error) {
	d, err := OpenAny(p)
	if err != nil {
		return Dir{}, err
	}
	ok, err := allowRootsOf(allow).contain(d.File)
	if err != nil {
		_ = d.Close()
		return Dir{}, fmt.Errorf("mount %s: %w", p, err)
	}
	if !ok {
		_ = d.Close()
		via := ""
		if abs, err := filepath.Abs(p); err != nil || abs != d.Path {
			via = " (resolves to " + d.Path + ")"
		}
		return Dir{}, fmt.Errorf("mount %s%s is not under this runner's mounts.allow %v", p, via, allowList(allow))
	}
	return d, nil
}

// OpenAny opens the host directory p as Open does (resolved, then opened
// without following a symlink), with no allow-list: for a path that is
// its caller's own (an embedder's plugin manifest, the operator's
// command line), which may name any directory.
func OpenAny(p string) (Dir, error) {
	real, err := Resolve(p)
	if err != nil {
		return Dir{}, err
	}
	f, err := openDirNoFollow(real)
	if err != nil {
		return Dir{}, fmt.Errorf("mount %s: %w", p, err)
	}
	return Dir{Path: real, File: f}, nil
}

// Resolve returns the real path of a host directory: absolute, cleaned,
// every symlink followed. It fails when the path does not exist or is not
// a directory, or is empty. It is the path Open checks and opens without
// following symlinks, so that a symlink changed after the check cannot
// redirect it.
func Resolve(p string) (string, error) {
	if p == "" {
		return "", errNoPath // filepath.Abs would make it the working directory
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("mount %s: the host directory does not exist", p)
		}
		return "", fmt.Errorf("mount %s: %w", p, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("mount %s: %w", p, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("mount %s: not a directory", p)
	}
	return real, nil
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

// allowList shows an allow-list in messages; an empty one is explicit.
func allowList(allow []string) string {
	if len(allow) == 0 {
		return "(empty: no mounts allowed)"
	}
	return fmt.Sprint(allow)
}

// errNoPath is an empty host path.
var errNoPath = errors.New("mount: the host path is empty")

// errPathChanged is an open that met a symlink (or a file that is not a
// directory) in a path just resolved: it changed under the check.
var errPathChanged = errors.New("a component of the resolved host path is now a symlink or not a directory (it changed while the mount was checked)")
