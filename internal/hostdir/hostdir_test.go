//go:build unix

package hostdir_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/hostdir"
)

// TestOpenAnyResolvesThenHolds: a path of the caller's own (no
// allow-list) is resolved, every symlink followed, and the directory it
// names is what is held; what is not a directory (a file, a FIFO, which
// must not block), a path that does not exist and an empty one (not the
// working directory) are refused, each naming the path.
func TestOpenAnyResolvesThenHolds(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	real := filepath.Join(base, "real")
	require.NoError(t, os.Mkdir(real, 0o700))
	require.NoError(t, os.Symlink("real", filepath.Join(base, "link")))
	require.NoError(t, os.WriteFile(filepath.Join(base, "file"), nil, 0o600))
	require.NoError(t, syscall.Mkfifo(filepath.Join(base, "fifo"), 0o600))

	d, err := hostdir.OpenAny(filepath.Join(base, "link"))
	require.NoError(t, err)
	require.Equal(t, real, d.Path)
	fi, err := d.File.Stat()
	require.NoError(t, err)
	want, err := os.Stat(real)
	require.NoError(t, err)
	require.True(t, os.SameFile(want, fi))
	require.NoError(t, d.Close())
	require.NoError(t, hostdir.Dir{}.Close(), "nothing held, nothing to close")

	for p, msg := range map[string]string{
		filepath.Join(base, "file"): "mount " + filepath.Join(base, "file") + ": not a directory",
		filepath.Join(base, "fifo"): "mount " + filepath.Join(base, "fifo") + ": not a directory",
		filepath.Join(base, "gone"): "mount " + filepath.Join(base, "gone") + ": the host directory does not exist",
		"":                          "mount: the host path is empty",
	} {
		_, err := hostdir.OpenAny(p)
		require.EqualError(t, err, msg)
		_, err = hostdir.Resolve(p)
		require.EqualError(t, err, msg)
		_, err = hostdir.Open(p, []string{"/"})
		require.EqualError(t, err, msg)
	}
}

// TestOpenDeniesByDefault: an empty allow-list allows nothing, and says
// so; a directory the allow-list names is allowed, as is one beneath it
// reached through a symlink elsewhere.
func TestOpenDeniesByDefault(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	allowed := filepath.Join(base, "allowed")
	require.NoError(t, os.MkdirAll(filepath.Join(allowed, "in"), 0o700))
	require.NoError(t, os.Symlink("allowed/in", filepath.Join(base, "into")))

	_, err = hostdir.Open(allowed, nil)
	require.EqualError(t, err, "mount "+allowed+" is not under this runner's mounts.allow (empty: no mounts allowed)")
	for _, p := range []string{allowed, filepath.Join(base, "into")} {
		d, err := hostdir.Open(p, []string{allowed})
		require.NoError(t, err, p)
		require.NoError(t, d.Close())
	}
}
