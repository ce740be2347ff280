//go:build unix

package fsutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWriteMode: the file written has the mode asked less the umask (as
// os.WriteFile), whatever the mode of the file it replaces. Not parallel:
// the umask is the process's.
func TestWriteMode(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer func() { _ = root.Close() }()
	for _, c := range []struct {
		umask      int
		perm, want fs.FileMode
	}{{0o022, 0o600, 0o600}, {0o022, 0o644, 0o644}, {0o022, 0o666, 0o644}, {0, 0o666, 0o666}, {0o077, 0o644, 0o600}} {
		path := filepath.Join(dir, "f")
		require.NoError(t, os.WriteFile(path, nil, 0o600))
		require.NoError(t, os.Chmod(path, 0o755))
		old := syscall.Umask(c.umask)
		err1 := WriteFile(path, []byte("x"), c.perm, Options{})
		fi1, _ := os.Stat(path)
		require.NoError(t, os.Chmod(path, 0o755))
		err2 := WriteFileIn(root, "f", []byte("x"), c.perm, Options{})
		fi2, _ := os.Stat(path)
		syscall.Umask(old)
		require.NoError(t, err1)
		require.NoError(t, err2)
		require.Equal(t, c.want, fi1.Mode().Perm(), "WriteFile %#o under umask %#o", c.perm, c.umask)
		require.Equal(t, c.want, fi2.Mode().Perm(), "WriteFileIn %#o under umask %#o", c.perm, c.umask)
	}
}

// TestPrivateModes: MkdirPrivate makes every missing directory 0700 and
// CreatePrivate the file 0600 whatever the umask, both leave what exists
// as it is, and WideFiles names what others may read. Not parallel: the
// umask is the process's.
func TestPrivateModes(t *testing.T) {
	for _, umask := range []int{0o022, 0} {
		root := t.TempDir()
		require.NoError(t, os.Chmod(root, 0o755))
		dir := filepath.Join(root, "a", "b")
		file := filepath.Join(dir, "db")
		old := syscall.Umask(umask)
		errDir := MkdirPrivate(dir)
		errFile := CreatePrivate(file)
		syscall.Umask(old)
		require.NoError(t, errDir)
		require.NoError(t, errFile)
		for p, want := range map[string]fs.FileMode{root: 0o755, filepath.Join(root, "a"): PrivateDirMode, dir: PrivateDirMode, file: PrivateFileMode} {
			fi, err := os.Stat(p)
			require.NoError(t, err)
			require.Equal(t, want, fi.Mode().Perm(), "%s under umask %#o", p, umask)
		}
		require.Empty(t, WideFiles(dir, file, filepath.Join(root, "missing")))
		require.Equal(t, []string{root + " (0755)"}, WideFiles(root, dir))

		// What exists is left as it is.
		require.NoError(t, os.WriteFile(file, []byte("data"), 0o600))
		require.NoError(t, os.Chmod(file, 0o644))
		require.NoError(t, CreatePrivate(file))
		require.NoError(t, MkdirPrivate(root))
		got, err := os.ReadFile(file)
		require.NoError(t, err)
		require.Equal(t, "data", string(got))
		require.Equal(t, []string{file + " (0644)", root + " (0755)"}, WideFiles(file, root))
	}
}
