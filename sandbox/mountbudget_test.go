//go:build unix

package sandbox

import (
	"context"
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stretchr/testify/require"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
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
	ctx := context.Background()
	rt, err := New(ctx, Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(ctx)) })
	mod, err := rt.Compile(ctx, wat.MustLoad("mount_diskhog"))
	require.NoError(t, err)

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
	ctx := context.Background()
	rt, err := New(ctx, Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(ctx)) })
	mod, err := rt.Compile(ctx, wat.MustLoad("mount_diskhog"))
	require.NoError(t, err)
	for _, lim := range []Limits{{}, {MaxDiskBytes: -1, MaxDiskFiles: -1}} { // the default (1 GiB) and none
		made, errno, dir := runDiskHog(t, rt, mod, "w", lim)
		require.Zero(t, errno)
		require.EqualValues(t, 16<<20, made, "the guest wrote all it meant to")
		apparent, _, _ := diskUsage(t, dir)
		require.EqualValues(t, 16<<20, apparent)
	}
}

// The budget is the run's, across all its mounts, and every write
// counts: rewriting a byte costs it again, a hole costs its size,
// deleting gives nothing back, and a call it refuses does nothing.
func TestDiskBudgetAccounting(t *testing.T) {
	t.Parallel()
	shared := newMountBudget(Limits{MaxDiskBytes: 100, MaxDiskFiles: 3})
	a := openTestMountShared(t, shared)
	b := openTestMountShared(t, shared)
	f, errno := a.OpenFile("f", rdwr|creat, 0o600)
	require.Zero(t, errno)
	defer f.Close()
	n, errno := f.Write(make([]byte, 40))
	require.Zero(t, errno)
	require.Equal(t, 40, n)
	_, errno = f.Pwrite(make([]byte, 10), 0) // a rewrite: 10 more
	require.Zero(t, errno)
	_, errno = f.Pwrite(make([]byte, 10), 60) // a hole of 20: 30 more
	require.Zero(t, errno)
	require.EqualValues(t, 80, shared.bytes.Load())
	require.Equal(t, errNoSpace, f.Truncate(101), "growing to 101 costs 31")
	require.Zero(t, f.Truncate(90)) // 20 more: 100
	st, errno := f.Stat()
	require.Zero(t, errno)
	require.EqualValues(t, 90, st.Size)
	_, errno = f.Write([]byte{1})
	require.Equal(t, errNoSpace, errno)
	require.True(t, shared.takeRefused())
	require.False(t, shared.takeRefused(), "asked once")

	require.Zero(t, b.Mkdir("d", 0o700))
	require.Equal(t, errNoSpace, b.Symlink("f", "s"), "its target's byte is over the byte budget (TestDiskBudgetSymlinkTargets)")
	require.Zero(t, b.Mkdir("s", 0o700), "the refused symlink's file was given back")
	require.Equal(t, errNoSpace, b.Link("s", "l"), "the fourth file of the run, in another mount")
	require.Zero(t, b.Rmdir("s"))
	require.Equal(t, errNoSpace, b.Mkdir("e", 0o700), "deleting gives nothing back")
	g, errno := a.OpenFile("f", rdwr|creat, 0o600)
	require.Zero(t, errno, "opening an existing file with O_CREAT creates nothing")
	require.Zero(t, g.Close())
}

// TestDiskBudgetSymlinkTargets: a symlink's target is charged to the disk
// budget as bytes written (it is data the file system keeps, up to 4 KiB
// a link), and given back when the call fails; a symlink the file budget
// refuses charges no bytes.
func TestDiskBudgetSymlinkTargets(t *testing.T) {
	t.Parallel()
	shared := newMountBudget(Limits{MaxDiskBytes: 10_000, MaxDiskFiles: 4})
	m := openTestMountShared(t, shared)
	target := strings.Repeat("t", 4000)
	require.Zero(t, m.Symlink(target, "a"))
	require.Zero(t, m.Symlink(target, "b"))
	require.EqualValues(t, 8000, shared.bytes.Load())
	require.EqualValues(t, 2, shared.created.Load())
	require.Equal(t, errNoSpace, m.Symlink(target, "c"), "12,000 bytes of targets: over the budget")
	require.True(t, shared.takeRefused())
	require.Equal(t, experimentalsys.EEXIST, m.Symlink("x", "a"), "a failed call gives its bytes back")
	require.EqualValues(t, 8000, shared.bytes.Load())
	require.EqualValues(t, 2, shared.created.Load())
	require.Zero(t, m.Symlink(strings.Repeat("u", 2000), "c"), "exactly the budget")
	require.EqualValues(t, 10_000, shared.bytes.Load())
	require.Zero(t, m.Unlink("a"))
	require.Equal(t, errNoSpace, m.Symlink("v", "d"), "deleting gives nothing back")

	// The file budget refuses first: no bytes are charged.
	files := newMountBudget(Limits{MaxDiskBytes: 10, MaxDiskFiles: 1})
	f := openTestMountShared(t, files)
	require.Zero(t, f.Mkdir("d", 0o700))
	require.Equal(t, errNoSpace, f.Symlink("abc", "s"))
	require.Zero(t, files.bytes.Load())
	target, err := os.Readlink(filepath.Join(f.dir, "s"))
	require.ErrorIs(t, err, os.ErrNotExist, "%q", target)
}

// openTestMountShared opens a fresh writable mount on shared.
func openTestMountShared(t *testing.T, shared *mountBudget) *mountFS {
	t.Helper()
	m, err := newMountFS(t.TempDir(), shared)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	return m
}
