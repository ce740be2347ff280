package e2e

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// mountBytes is the apparent size of the files in dir, and its entries.
func mountBytes(t *testing.T, dir string) (size int64, entries int) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		size += fi.Size()
	}
	return size, len(ents)
}

// TestRunDiskBudget: the real runner gives a guest's writable mount the
// disk budget its flags and keys say (--disk, --limits-disk-files): the
// guest gets ENOSPC (WASI errno 51) there, goes on and exits 0, and the
// host directory holds no more; a budget over limits.max_disk is refused.
func TestRunDiskBudget(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode      string
		flags     []string
		wantMade  uint64
		wantSize  int64
		wantFiles int
	}{
		{"w", []string{"--disk", "1MiB"}, 1 << 20, 1 << 20, 1},
		{"p", []string{"--limits-disk", "1MiB"}, 0, 0, 1},
		{"f", []string{"--limits-disk-files", "50"}, 50, 0, 50},
		{"d", []string{"--disk-files", "20"}, 20, 0, 20}, // size not checked: a directory's is its file system's
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := append([]string{"run", "-v", fixture(t, "mount_diskhog"), "--input", "-",
				"--mount", dir + ":/data:rw", "--data-dir", dataDir(t)}, c.flags...)
			stdout, stderr, code := runRunner(t, c.mode, args...)
			require.Equal(t, 0, code, stderr)
			require.Len(t, stdout, 12)
			require.Equal(t, c.wantMade, binary.LittleEndian.Uint64([]byte(stdout)))
			require.EqualValues(t, 51, binary.LittleEndian.Uint32([]byte(stdout)[8:]), "ENOSPC")
			size, files := mountBytes(t, dir)
			if c.mode != "d" { // a directory's size is its file system's
				require.Equal(t, c.wantSize, size)
			}
			require.Equal(t, c.wantFiles, files)
		})
	}

	runExits(t, 2, "disk 32GiB is over the runner's maximum 16GiB",
		"run", "-v", fixture(t, "noop"), "--disk", "32GiB", "--data-dir", dataDir(t))
}
