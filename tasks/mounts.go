package tasks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ResolveHostPath returns the real path of a mount's host directory:
// absolute, cleaned, every symlink followed. It fails when the path does
// not exist or is not a directory. The allow-list is checked against this
// path, and it is the path OpenMounts opens without following symlinks,
// so that a symlink changed after the check cannot redirect the mount.
func ResolveHostPath(p string) (string, error) {
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

// ResolveMounts checks mounts against an allow-list as OpenMounts does
// (the same checks, on descriptors) and returns the mounts with their
// resolved host paths, nothing left open, or an error naming every mount
// refused (not wrapped in ErrInvalidSpec: callers say what it is). It is a
// check (CheckSpec at submission): a path it returns may change before it
// is used, so whatever mounts a directory uses OpenMounts' descriptors.
func ResolveMounts(ms []Mount, allow []string) ([]Mount, error) {
	gs, err := OpenMounts(ms, allow)
	if err != nil {
		return nil, err
	}
	out := make([]Mount, len(gs))
	for i, g := range gs {
		out[i] = g.Mount
	}
	if err := CloseMounts(gs); err != nil {
		return nil, err
	}
	return out, nil
}

// allowList shows an allow-list in messages; an empty one is explicit.
func allowList(allow []string) string {
	if len(allow) == 0 {
		return "(empty: no mounts allowed)"
	}
	return fmt.Sprint(allow)
}
