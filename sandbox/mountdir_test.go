//go:build unix

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMountDirIsWhatIsMounted: a Mount with Dir mounts that open
// directory, never its HostPath: after the directory is moved away and a
// symlink to another directory is put at its path, the run still sees the
// directory that was opened (and checked, tasks.OpenMounts). Validate
// checks Dir too, and the run leaves it open: it is the caller's.
func TestMountDirIsWhatIsMounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt, mod := fixtureRuntime(t, "mount_escape")

	base, d, outside := markedDirs(t)
	dir, err := os.Open(d)
	require.NoError(t, err)
	defer dir.Close()
	require.NoError(t, os.Rename(d, filepath.Join(base, "moved")))
	require.NoError(t, os.Symlink("outside", d))

	for _, writable := range []bool{false, true} {
		spec := Spec{Args: []string{"x", "marker"}, Mounts: []Mount{{HostPath: d, GuestPath: "/data", Writable: writable, Dir: dir}}}
		require.NoError(t, spec.Validate())
		out, err := rt.Run(ctx, mod, spec)
		require.NoError(t, err)
		require.Equal(t, KindSucceeded, out.Kind, out.Message)
		require.Contains(t, string(out.Stdout), "read 0 inside\n")
		require.NotContains(t, string(out.Stdout), "SECRET")
		// mount_escape writes and truncates what it read (when writable).
		require.NoError(t, os.WriteFile(filepath.Join(base, "moved", "marker"), []byte("inside"), 0o600))
	}
	got, err := os.ReadFile(filepath.Join(outside, "marker"))
	require.NoError(t, err)
	require.Equal(t, "SECRET", string(got), "untouched")
	_, err = dir.Stat()
	require.NoError(t, err, "the run leaves Dir open")

	// A plugin instance mounts Dir the same way.
	requireMarkerInside(t, d, dir)

	// A file is not a directory.
	file, err := os.Open(filepath.Join(outside, "marker"))
	require.NoError(t, err)
	defer file.Close()
	spec := Spec{Mounts: []Mount{{HostPath: d, GuestPath: "/data", Dir: file}}}
	require.ErrorContains(t, spec.Validate(), "not a directory")
}
