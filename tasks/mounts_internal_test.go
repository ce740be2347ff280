package tasks

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResolveMountsHandsOverTheRealPath: the sandbox gets the resolved
// host path, not the symlink the task named, so that a symlink swapped
// after the check cannot redirect the mount.
func TestResolveMountsHandsOverTheRealPath(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	real := filepath.Join(root, "real")
	require.NoError(t, os.Mkdir(real, 0o700))
	require.NoError(t, os.Symlink("real", filepath.Join(root, "link")))
	ms, err := ResolveMounts([]Mount{{HostPath: root + "/link", GuestPath: "/d", Writable: true}}, []string{root})
	require.NoError(t, err)
	want, err := filepath.EvalSymlinks(real)
	require.NoError(t, err)
	require.Equal(t, []Mount{{HostPath: want, GuestPath: "/d", Writable: true}}, ms)

	_, err = ResolveMounts([]Mount{{HostPath: root + "/link", GuestPath: "d"}}, []string{root})
	require.ErrorContains(t, err, `guest path "d" is not absolute`, "the store's content is not trusted")
}
