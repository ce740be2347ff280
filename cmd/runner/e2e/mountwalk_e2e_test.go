package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/internal/testwasm/ckernels"
)

// walkTree makes the tree TestRunMountWalk mounts, in T/mnt, with a
// secret beside it, outside the mount:
//
//	T/secret          "secret"
//	T/mnt/a/b/g.txt   "g"
//	T/mnt/a/x.txt     "xx"
//	T/mnt/c/f.txt     "c file"
//	T/mnt/link        a symlink to a
func walkTree(t *testing.T) (top, mnt string) {
	t.Helper()
	top = t.TempDir()
	mnt = filepath.Join(top, "mnt")
	require.NoError(t, os.WriteFile(filepath.Join(top, "secret"), []byte("secret\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(mnt, "a", "b"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(mnt, "c"), 0o755))
	for p, s := range map[string]string{"a/b/g.txt": "g\n", "a/x.txt": "xx\n", "c/f.txt": "c file\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(mnt, p), []byte(s), 0o644))
	}
	require.NoError(t, os.Symlink("a", filepath.Join(mnt, "link")))
	return top, mnt
}

// dirFDDotDot is what walk prints for a ".." relative to a directory
// descriptor below the mount's root (fstatat(dirfd, ".."),
// openat(dirfd, "../../c/f.txt")): refused with EPERM (63). The refusal is
// wazero's WASI layer's (its path functions refuse any guest path that
// cleans to a leading ".." before a file system sees it), not the mount's:
// the mount resolves a ".." that stays inside (sandbox/internal/mountfs,
// TestMountFSDotDotInside), and wazero alone prints the same lines. When
// sandbox's path functions resolve such a path against the directory's
// place in the mount (issue 42, item 5), these lines become "its parent"
// and "c file", and this test must say so.
const dirFDDotDot = "errno 63"

// walkWant is walk's output on walkTree mounted at /data.
var walkWant = strings.ReplaceAll(`/data .: itself
/data ..: errno 63
  a/
/data/a .: itself
/data/a ..: DIRFD
    b/
/data/a/b .: itself
/data/a/b ..: DIRFD
      g.txt 2
    x.txt 3
  c/
/data/c .: itself
/data/c ..: DIRFD
    f.txt 7
  link@
stat /data/a/..: is /data
stat /data/a/b/..: is /data/a
stat /data/.: is /data
stat /data/..: errno 63
open /data/a/../c/f.txt: c file
open a/b + ../../c/f.txt: DIRFD
open a/b + ../../../secret: errno 63
readdir a/b ..: a directory
`, "DIRFD", dirFDDotDot)

// TestRunMountWalk runs walk (ckernels' src/walk.c: scandir, fstatat
// relative to each directory's descriptor, and paths with "..") over a
// tree mounted with the real runner's --mount, and checks every line:
// paths with ".." that stay inside the mount resolve ("/data/a/b/.." is
// /data/a), the mount's own ".." is refused (EPERM: the mount has no
// parent the guest may see), and so is every ".." that would climb out
// of it. The same guest on wazero alone, with the directory mounted by
// WithReadOnlyDirMount, prints the same lines.
func TestRunMountWalk(t *testing.T) {
	t.Parallel()
	wasm, err := ckernels.Build(testwasm.CacheDir(t), "walk")
	if err != nil {
		require.ErrorIs(t, err, ckernels.ErrUnavailable)
		t.Skip(err)
	}
	module := filepath.Join(t.TempDir(), "walk.wasm")
	require.NoError(t, os.WriteFile(module, wasm, 0o600))
	_, mnt := walkTree(t)

	stdout, stderr, code := runRunner(t, "", "run", "-v", module, "--mount", mnt+":/data")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, walkWant, stdout)
	require.Contains(t, stderr, `"outcome":"succeeded"`)

	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	var out bytes.Buffer
	_, err = r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithStdout(&out).
		WithFSConfig(wazero.NewFSConfig().WithReadOnlyDirMount(mnt, "/data")))
	var exit *sys.ExitError
	require.True(t, err == nil || errors.As(err, &exit) && exit.ExitCode() == 0, "%v", err)
	require.Equal(t, walkWant, out.String(), "wazero alone")
}
