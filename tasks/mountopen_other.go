//go:build !unix

package tasks

import "os"

// allowRoots are the allow-listed directories, resolved. Without the *at
// system calls the check is on paths: the sandbox has no mounts here
// (mounts need a Unix host), so nothing is mounted from them.
type allowRoots []string

func openAllowRoots(allow []string) allowRoots { return resolveAllow(allow) }

func (r allowRoots) contain(dir *os.File) (bool, error) { return underAny(dir.Name(), r), nil }

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
