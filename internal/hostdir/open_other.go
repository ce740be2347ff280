//go:build !unix

package hostdir

import (
	"os"
	"path/filepath"
	"strings"
)

// allowRoots are the allow-listed directories, resolved. Without the *at
// system calls the check is on paths: the sandbox has no mounts here
// (mounts need a Unix host), so nothing is mounted from them.
type allowRoots []string

// openAllowRoots resolves the entries of an allow-list (Resolve). An
// entry that does not resolve allows nothing.
func openAllowRoots(allow []string) allowRoots {
	out := make(allowRoots, 0, len(allow))
	for _, d := range allow {
		if real, err := Resolve(d); err == nil {
			out = append(out, real)
		}
	}
	return out
}

// contain reports whether dir's resolved path is one of the roots or lies
// beneath one.
func (r allowRoots) contain(dir *os.File) (bool, error) {
	for _, root := range r {
		rel, err := filepath.Rel(root, dir.Name())
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true, nil
		}
	}
	return false, nil
}

// openDirNoFollow opens p and checks it is a directory.
func openDirNoFollow(p string) (*os.File, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		_ = f.Close()
		return nil, errPathChanged
	}
	return f, nil
}
