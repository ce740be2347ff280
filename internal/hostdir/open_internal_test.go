//go:build unix

package hostdir

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// swapLayout is base/allowed/box/d (a real directory holding "inside")
// and base/outside, outside the allow-list.
type swapLayout struct{ allowed, outside, box, d string }

func newSwapLayout(t *testing.T) swapLayout {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	l := swapLayout{allowed: filepath.Join(base, "allowed"), outside: filepath.Join(base, "outside")}
	l.box = filepath.Join(l.allowed, "box")
	l.d = filepath.Join(l.box, "d")
	require.NoError(t, os.MkdirAll(l.d, 0o700))
	require.NoError(t, os.Mkdir(l.outside, 0o700))
	return l
}

// TestOpenDirNoFollowRefusesEverySymlink: the resolved path is opened
// without following a symlink in any component, by openat2 and by the
// walk alike: a symlink there (put in after the path was resolved) fails
// with errPathChanged, never leads elsewhere.
func TestOpenDirNoFollowRefusesEverySymlink(t *testing.T) {
	t.Parallel()
	l := newSwapLayout(t)
	require.NoError(t, os.Symlink("../outside", filepath.Join(l.allowed, "last")))
	require.NoError(t, os.Symlink("..", filepath.Join(l.box, "mid")))
	require.NoError(t, os.WriteFile(filepath.Join(l.box, "file"), nil, 0o600))
	for name, open := range map[string]func(string) (*os.File, error){"openDirNoFollow": openDirNoFollow, "walk": walkDirNoFollow} {
		f, err := open(l.d)
		require.NoError(t, err, name)
		fi, err := f.Stat()
		require.NoError(t, err)
		want, err := os.Stat(l.d)
		require.NoError(t, err)
		require.True(t, os.SameFile(want, fi), name)
		require.NoError(t, f.Close())

		for _, p := range []string{filepath.Join(l.allowed, "last"), filepath.Join(l.box, "mid", "box", "d"), filepath.Join(l.box, "file")} {
			_, err := open(p)
			require.ErrorIs(t, err, errPathChanged, "%s %s", name, p)
		}
		_, err = open(filepath.Join(l.box, "gone"))
		require.ErrorIs(t, err, os.ErrNotExist, name)
	}
}

// TestOpenChecksTheDescriptor: the allow-list test is made on the opened
// directory (device and inode of it and its ancestors), and the Dir's
// File is that directory: moved after the check, it is still what File
// holds.
func TestOpenChecksTheDescriptor(t *testing.T) {
	t.Parallel()
	l := newSwapLayout(t)
	require.NoError(t, os.WriteFile(filepath.Join(l.d, "marker"), []byte("inside"), 0o600))
	d, err := Open(l.d, []string{l.allowed})
	require.NoError(t, err)
	require.Equal(t, l.d, d.Path)
	a, err := Open(l.allowed, []string{l.allowed})
	require.NoError(t, err)
	require.NoError(t, a.Close())

	// Moved outside (by the host) and replaced by a symlink: File is still
	// the directory that was checked.
	require.NoError(t, os.Rename(l.d, filepath.Join(l.outside, "d")))
	require.NoError(t, os.Symlink("../../outside", l.d))
	got, err := os.ReadFile(filepath.Join(fdDirPath(d.File), "marker"))
	require.NoError(t, err)
	require.Equal(t, "inside", string(got))
	require.NoError(t, d.Close())

	// Checked again now, the symlink resolves outside: refused.
	_, err = Open(l.d, []string{l.allowed})
	require.ErrorContains(t, err, "(resolves to "+l.outside+") is not under this runner's mounts.allow")
	// The directory itself, now outside, is refused by its descriptor.
	_, err = Open(filepath.Join(l.outside, "d"), []string{l.allowed})
	require.ErrorContains(t, err, "is not under this runner's mounts.allow")
	// An allow-list entry that does not open allows nothing.
	_, err = Open(l.outside, []string{filepath.Join(l.allowed, "gone")})
	require.ErrorContains(t, err, "is not under this runner's mounts.allow")
	// "/" allows everything (runner run).
	d, err = Open(l.outside, []string{"/"})
	require.NoError(t, err)
	require.NoError(t, d.Close())
}

// TestOpenRacesASwap: a goroutine does what a guest with a read-write
// mount of box could (rename d away, put a relative symlink to outside in
// its place, put d back) while Open checks d many times: every directory
// granted is the real d, never outside.
func TestOpenRacesASwap(t *testing.T) {
	t.Parallel()
	l := newSwapLayout(t)
	real, err := os.Stat(l.d)
	require.NoError(t, err)
	moved := filepath.Join(l.box, "d.real")
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			for _, step := range []func() error{
				func() error { return os.Rename(l.d, moved) },
				func() error { return os.Symlink("../../outside", l.d) },
				func() error { return os.Remove(l.d) },
				func() error { return os.Rename(moved, l.d) },
			} {
				if err := step(); err != nil {
					done <- err
					return
				}
			}
		}
	}()
	granted := 0
	for range 5000 {
		d, err := Open(l.d, []string{l.allowed})
		if err != nil {
			continue // refused: the path was a symlink, missing, or changed under the check
		}
		fi, err := d.File.Stat()
		require.NoError(t, err)
		require.True(t, os.SameFile(real, fi), "granted a directory other than d: %s", d.Path)
		require.NoError(t, d.Close())
		granted++
	}
	close(stop)
	require.NoError(t, <-done)
	t.Logf("granted %d of 5000", granted)
}

// fdDirPath names an open directory by its descriptor.
func fdDirPath(f *os.File) string {
	if _, err := os.Stat("/proc/self/fd"); err == nil {
		return "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	}
	return "/dev/fd/" + strconv.Itoa(int(f.Fd()))
}

// TestOpenNestedAllowEntry: with an allow-list entry nested in
// another, a guest holding a writable mount of the outer one can swap the
// inner one for a symlink out of the allow-list; the allow-list keeps the
// directories it named when first used, so the swapped path is refused.
func TestOpenNestedAllowEntry(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	outer, inner, outside := filepath.Join(base, "outer"), filepath.Join(base, "outer", "inner"), filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(inner, 0o700))
	require.NoError(t, os.Mkdir(outside, 0o700))
	allow := []string{outer, inner}

	d, err := Open(inner, allow)
	require.NoError(t, err)
	require.NoError(t, d.Close())

	// What a guest with a writable mount of outer can do.
	require.NoError(t, os.Rename(inner, filepath.Join(outer, "moved")))
	require.NoError(t, os.Symlink("../outside", inner))
	_, err = Open(inner, allow)
	require.ErrorContains(t, err, "is not under this runner's mounts.allow")
	// The directory the entry named, moved within outer, is still allowed.
	d, err = Open(filepath.Join(outer, "moved"), allow)
	require.NoError(t, err)
	require.NoError(t, d.Close())
}
