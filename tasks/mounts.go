package tasks

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ResolveHostPath returns the real path of a mount's host directory:
// absolute, cleaned, every symlink followed. It fails when the path does
// not exist or is not a directory. The allow-list is checked against this
// path, and it is the one given to the sandbox, so that a symlink changed
// after the check cannot redirect the mount.
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

// resolveAllow resolves the entries of an allow-list as ResolveHostPath
// does. An entry that does not resolve (missing, not a directory) allows
// nothing.
func resolveAllow(allow []string) []string {
	out := make([]string, 0, len(allow))
	for _, d := range allow {
		if real, err := ResolveHostPath(d); err == nil {
			out = append(out, real)
		}
	}
	return out
}

// ResolveMounts checks mounts against an allow-list, symlinks resolved on
// both sides: each host path must exist, be a directory, and lie under an
// entry of allow once both are resolved (deny by default), and each guest
// path must be absolute. It returns the mounts with their resolved host
// paths, or an error naming every mount refused (not wrapped in
// ErrInvalidSpec: callers say what it is).
func ResolveMounts(ms []Mount, allow []string) ([]Mount, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	dirs := resolveAllow(allow)
	var errs []error
	out := make([]Mount, 0, len(ms))
	for _, m := range ms {
		if !path.IsAbs(m.GuestPath) {
			errs = append(errs, fmt.Errorf("mount %s: guest path %q is not absolute", m.HostPath, m.GuestPath))
			continue
		}
		real, err := ResolveHostPath(m.HostPath)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !underAny(real, dirs) {
			via := ""
			if abs, err := filepath.Abs(m.HostPath); err != nil || abs != real {
				via = " (resolves to " + real + ")"
			}
			errs = append(errs, fmt.Errorf("mount %s%s is not under this runner's mounts.allow %v", m.HostPath, via, allowList(allow)))
			continue
		}
		out = append(out, Mount{HostPath: real, GuestPath: m.GuestPath, Writable: m.Writable})
	}
	if err := errors.Join(errs...); err != nil {
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

// underAny reports whether path is one of dirs or lies beneath one. Both
// sides must already be resolved (ResolveHostPath): the comparison is
// lexical.
func underAny(path string, dirs []string) bool {
	for _, d := range dirs {
		rel, err := filepath.Rel(d, path)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
