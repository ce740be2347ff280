package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckpointFileHeldDirectory: `runner run --checkpoint` reads and
// writes through the directory it opened at the start. A guest that holds
// that directory in a mount and puts a symlink to a host file where the
// checkpoint was cannot get that file as its checkpoint; one that moves
// the directory and puts a symlink in its place cannot redirect the write.
func TestCheckpointFileHeldDirectory(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	work, outside := filepath.Join(base, "work"), filepath.Join(base, "outside")
	require.NoError(t, os.Mkdir(work, 0o700))
	require.NoError(t, os.Mkdir(outside, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o600))
	path := filepath.Join(work, "state.ckpt")

	c, err := openCheckpointFile(path)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.read(1 << 20)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, c.write([]byte("one")))
	got, err := c.read(1 << 20)
	require.NoError(t, err)
	require.Equal(t, "one", string(got))
	_, err = c.read(2)
	require.ErrorContains(t, err, "limits.max_checkpoint")

	// The file swapped for a symlink to a host file: refused.
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Symlink("../outside/secret", path))
	_, err = c.read(1 << 20)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "SECRET")

	// The directory moved and a symlink put in its place: the write goes
	// to the directory that was opened.
	require.NoError(t, os.Rename(work, filepath.Join(base, "moved")))
	require.NoError(t, os.Symlink("outside", work))
	require.NoError(t, c.write([]byte("two")))
	b, err := os.ReadFile(filepath.Join(base, "moved", "state.ckpt"))
	require.NoError(t, err)
	require.Equal(t, "two", string(b))
	_, err = os.Stat(filepath.Join(outside, "state.ckpt"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
