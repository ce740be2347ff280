package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox/internal/mountfs"
)

// TestHoldMounts: a plugin's mounts are opened once, at load, and every
// instance mounts what was opened then: a link put in place of a mount's
// path afterwards (by anyone, a plugin's writable mount above it included)
// leads nowhere. The caller's manifest is left as it was.
func TestHoldMounts(t *testing.T) {
	base, d, outside := markedDirs(t)

	given := []Mount{{HostPath: d, GuestPath: "/data"}}
	mounts, held, err := holdMounts(given)
	require.NoError(t, err)
	defer closeFiles(held)
	require.Len(t, held, 1)
	require.Nil(t, given[0].Dir, "the caller's mounts unchanged")
	require.Same(t, held[0], mounts[0].Dir)

	require.NoError(t, os.Rename(d, filepath.Join(base, "moved")))
	require.NoError(t, os.Symlink("outside", d))

	requireMarkerInside(t, mounts[0].HostPath, mounts[0].Dir) // as an instance does

	// A path that is not a directory is refused at load, naming it.
	_, _, err = holdMounts([]Mount{{HostPath: filepath.Join(outside, "marker"), GuestPath: "/x"}})
	require.ErrorIs(t, err, ErrManifest)
	require.ErrorContains(t, err, "marker")
}

// requireMarkerInside checks that a mount of dir (opened at hostPath) as a
// plugin instance makes it (mountfs.Open) reads "inside" from its file
// marker.
func requireMarkerInside(t *testing.T, hostPath string, dir *os.File) {
	t.Helper()
	m, err := mountfs.Open(hostPath, dir, nil)
	require.NoError(t, err)
	defer m.Close()
	f, errno := m.OpenFile("marker", 0, 0)
	require.Zero(t, errno)
	defer f.Close()
	b := make([]byte, 16)
	n, errno := f.Read(b)
	require.Zero(t, errno)
	require.Equal(t, "inside", string(b[:n]))
}

// markedDirs makes two directories side by side in base, a temp dir of
// t: d, whose file marker holds "inside", and outside, whose marker holds
// "SECRET".
func markedDirs(t *testing.T) (base, d, outside string) {
	t.Helper()
	base = t.TempDir()
	d, outside = filepath.Join(base, "d"), filepath.Join(base, "outside")
	require.NoError(t, os.Mkdir(d, 0o700))
	require.NoError(t, os.Mkdir(outside, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(d, "marker"), []byte("inside"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "marker"), []byte("SECRET"), 0o600))
	return base, d, outside
}
