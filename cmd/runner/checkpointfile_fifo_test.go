//go:build unix

package main

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckpointFileFIFO: a FIFO at the checkpoint's path is refused at
// once (opened without blocking, not a regular file); it used to block the
// open until a writer came.
func TestCheckpointFileFIFO(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.ckpt")
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	c, err := openCheckpointFile(path)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.read(1 << 20)
	require.ErrorContains(t, err, "not a regular file")
}
