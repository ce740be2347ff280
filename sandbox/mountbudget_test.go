//go:build unix

package sandbox

import (
	"context"
	"encoding/binary"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

const wasiENOSPC = 51

// diskUsage is what dir holds: the apparent size of its files (what host
// tools see and copy), the blocks they take, and its entries.
func diskUsage(t *testing.T, dir string) (apparent, allocated, entries int64) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if p == dir {
			return nil
		}
		entries++
		var st syscall.Stat_t
		require.NoError(t, syscall.Lstat(p, &st))
		apparent += st.Size
		allocated += st.Blocks * 512
		return nil
	}))
	return apparent, allocated, entries
}

// runDiskHog runs the mount_diskhog fixture in mode against a fresh
// writable mount under lim and returns what it reports and the mount.
func runDiskHog(t *testing.T, rt *Runtime, mod *Module, mode string, lim Limits) (made int64, errno uint32, dir string) {
	t.Helper()
	dir = t.TempDir()
	out, err := rt.Run(context.Background(), mod, Spec{Input: []byte(mode), Limits: lim,
		Mounts: []Mount{{HostPath: dir, GuestPath: "/data", Writable: true}}})
	require.NoError(t, err)
	require.Equal(t, KindSucceeded, out.Kind, "the run goes on past the budget: %s", out)
	require.Len(t, out.Stdout, 12)
	return int64(binary.LittleEndian.Uint64(out.Stdout)), binary.LittleEndian.Uint32(out.Stdout[8:]), dir
}

// Hostile guests that write in a loop, pwrite at 1 TiB, truncate or
// allocate to 1 TiB, or create files, directories or symlinks without end
// each get ENOSPC at the run's disk budget and go on; the host directory
// holds at most the budget.
func TestDiskBudgetENOSPC(t *testing.T) {
	t.Parallel()
	rt, mod := fixtureRuntime(t, "mount_diskhog")

	const budget, files = 1 << 20, 100
	lim := Limits{MaxDiskBytes: budget, MaxDiskFiles: files}
	for _, c := range []struct {
		mode      string
		wantMade  int64 // what the guest made before ENOSPC
		wantFiles int64 // entries the mount holds after
	}{
		{"w", budget, 1},    // 16 writes of 64 KiB, the 17th refused
		{"p", 0, 1},         // the 1 TiB hole is refused
		{"t", 0, 1},         // so is growing to 1 TiB
		{"a", 0, 1},         // and allocating it
		{"f", files, files}, // files...
		{"d", files, files}, // directories...
		{"s", files, files}, // and symlinks count
	} {
		t.Run(c.mode, func(t *testing.T) {
			made, errno, dir := runDiskHog(t, rt, mod, c.mode, lim)
			require.EqualValues(t, wasiENOSPC, errno, "the guest sees ENOSPC")
			require.Equal(t, c.wantMade, made)
			apparent, allocated, entries := diskUsage(t, dir)
			require.LessOrEqual(t, apparent, int64(budget), "apparent size within the budget")
			require.LessOrEqual(t, allocated, int64(budget)+64<<10, "blocks within the budget")
			require.Equal(t, c.wantFiles, entries)
			t.Logf("mode %s: made %d, then errno %d; the mount holds %d bytes (%d allocated) in %d entries",
				c.mode, made, errno, apparent, allocated, entries)
		})
	}
}

// Under its budget a guest is unaffected, and with no budget (negative)
// nothing is counted.
func TestDiskBudgetUnder(t *testing.T) {
	t.Parallel()
	rt, mod := fixtureRuntime(t, "mount_diskhog")
	for _, lim := range []Limits{{}, {MaxDiskBytes: -1, MaxDiskFiles: -1}} { // the default (1 GiB) and none
		made, errno, dir := runDiskHog(t, rt, mod, "w", lim)
		require.Zero(t, errno)
		require.EqualValues(t, 16<<20, made, "the guest wrote all it meant to")
		apparent, _, _ := diskUsage(t, dir)
		require.EqualValues(t, 16<<20, apparent)
	}
}
