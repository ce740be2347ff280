//go:build unix

package testutil

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// SpecialDir is a fresh directory holding a FIFO nobody writes ("fifo"),
// a Unix socket ("sock", where the system lets one be made) and a regular
// file ("f"), as a host might leave them in a mount.
func SpecialDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	ln, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err == nil {
		t.Cleanup(func() { _ = ln.Close() })
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600))
	return dir
}
