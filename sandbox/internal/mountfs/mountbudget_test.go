//go:build unix

package mountfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// The budget is the run's, across all its mounts, and every write
// counts: rewriting a byte costs it again, a hole costs its size,
// deleting gives nothing back, and a call it refuses does nothing.
func TestDiskBudgetAccounting(t *testing.T) {
	t.Parallel()
	shared := NewBudget(100, 3)
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
	require.True(t, shared.TakeRefused())
	require.False(t, shared.TakeRefused(), "asked once")

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
	shared := NewBudget(10_000, 4)
	m := openTestMountShared(t, shared)
	target := strings.Repeat("t", 4000)
	require.Zero(t, m.Symlink(target, "a"))
	require.Zero(t, m.Symlink(target, "b"))
	require.EqualValues(t, 8000, shared.bytes.Load())
	require.EqualValues(t, 2, shared.created.Load())
	require.Equal(t, errNoSpace, m.Symlink(target, "c"), "12,000 bytes of targets: over the budget")
	require.True(t, shared.TakeRefused())
	require.Equal(t, experimentalsys.EEXIST, m.Symlink("x", "a"), "a failed call gives its bytes back")
	require.EqualValues(t, 8000, shared.bytes.Load())
	require.EqualValues(t, 2, shared.created.Load())
	require.Zero(t, m.Symlink(strings.Repeat("u", 2000), "c"), "exactly the budget")
	require.EqualValues(t, 10_000, shared.bytes.Load())
	require.Zero(t, m.Unlink("a"))
	require.Equal(t, errNoSpace, m.Symlink("v", "d"), "deleting gives nothing back")

	// The file budget refuses first: no bytes are charged.
	files := NewBudget(10, 1)
	f := openTestMountShared(t, files)
	require.Zero(t, f.Mkdir("d", 0o700))
	require.Equal(t, errNoSpace, f.Symlink("abc", "s"))
	require.Zero(t, files.bytes.Load())
	target, err := os.Readlink(filepath.Join(f.dir, "s"))
	require.ErrorIs(t, err, os.ErrNotExist, "%q", target)
}

// openTestMountShared opens a fresh writable mount on shared.
func openTestMountShared(t *testing.T, shared *Budget) *FS {
	t.Helper()
	m, err := newMountFS(t.TempDir(), shared)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	return m
}
