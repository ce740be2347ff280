package main

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOutDirWrite: an output is written whole under its name, an existing
// one replaced, with the unnamed file and link (Linux) and with a named
// temporary file and rename; neither leaves anything else in the folder.
func TestOutDirWrite(t *testing.T) {
	t.Parallel()
	for _, named := range []bool{false, true} {
		dir := t.TempDir()
		o, removed, err := openOutDir(dir)
		require.NoError(t, err)
		require.Zero(t, removed)
		if named {
			o.noLink.Store(true)
		}
		require.NoError(t, o.write("a.txt", []byte("first\n")))
		require.NoError(t, o.write("b.txt", nil))
		require.NoError(t, o.write("a.txt", []byte("second, longer\n")))
		require.Equal(t, "second, longer\n", string(readFile(t, filepath.Join(dir, "a.txt"))))
		require.Empty(t, readFile(t, filepath.Join(dir, "b.txt")))
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, ents, 2, "only the outputs, no temporary file: %v", ents)
		fi, err := os.Stat(filepath.Join(dir, "a.txt"))
		require.NoError(t, err)
		require.Zero(t, fi.Mode().Perm()&0o133, "created 0644 less the umask: %v", fi.Mode())
		if runtime.GOOS == "linux" && !named {
			require.False(t, o.noLink.Load(), "linked on Linux (O_TMPFILE on this file system)")
		}
	}
}
