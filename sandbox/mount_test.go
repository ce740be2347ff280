//go:build unix

package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox/internal/mountfs"

	"github.com/stint-run/stint/internal/testutil"
)

// These tests run guests on mounts; the file system's own tests (the
// escapes case by case, parity with DirFS, read-only mounts, the disk
// budget's accounting) are mountfs's.
//
// The escape tests' layout (internal/testutil.EscapeLayout).
var newEscapeLayout = testutil.NewEscapeLayout

const secretText = testutil.SecretText

func TestMountFSEscapeE2E(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt, mod := fixtureRuntime(t, "mount_escape")

	l := newEscapeLayout(t)
	// A host symlink left in the read-only mount, to the secret.
	require.NoError(t, os.Symlink("../secret.txt", filepath.Join(l.Mnt, "hostlink")))
	before := l.OutsideState(t)
	deep := strings.Repeat("../", 40)

	for _, tc := range []struct {
		name           string
		writable       bool
		target, attack string
		want           string
	}{
		{"relative symlink up", true, "..", "esc/secret.txt",
			"symlink 0\nread 63\nwrite 63\ntrunc 63\ncreate 63\nlink 63\nmkdir 63\nstat 63\n"},
		{"deep symlink to the host root", true, deep, "esc" + l.Secret,
			"symlink 0\nread 63\nwrite 63\ntrunc 63\ncreate 63\nlink 63\nmkdir 63\nstat 63\n"},
		{"symlink made by the host, read-only mount", false, "..", "hostlink",
			"symlink 69\nread 63\nwrite 52\ntrunc 69\ncreate 69\nlink 69\nmkdir 69\nstat 63\n"},
	} {
		out, err := rt.Run(ctx, mod, Spec{
			Args:   []string{tc.target, tc.attack},
			Mounts: []Mount{{HostPath: l.Mnt, GuestPath: "/data", Writable: tc.writable}},
		})
		require.NoError(t, err, tc.name)
		require.Equal(t, KindSucceeded, out.Kind, "%s: %s", tc.name, out)
		require.NotContains(t, string(out.Stdout), secretText, tc.name)
		require.Equal(t, tc.want, string(out.Stdout), tc.name)
		if tc.writable {
			require.NoError(t, os.Remove(filepath.Join(l.Mnt, "esc")), tc.name)
		}
		require.Equal(t, before, l.OutsideState(t), "%s changed a file outside the mount", tc.name)
	}
	entries, err := os.ReadDir(l.Mnt)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"hostlink", "in.txt", "sub"}, names)
}

// TestDirFSEscapes shows the hole TestMountFSEscapeE2E closes: the same
// guest, given a mount made by wazero's WithDirMount, reads and writes the
// host file, and hard-links it into the mount.
func TestDirFSEscapes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newEscapeLayout(t)
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	var stdout bytes.Buffer
	cfg := wazero.NewModuleConfig().WithStdout(&stdout).WithArgs("task", "..", "esc/secret.txt").
		WithFSConfig(wazero.NewFSConfig().WithDirMount(l.Mnt, "/data"))
	_, err := r.InstantiateWithConfig(ctx, wat.MustLoad("mount_escape"), cfg)
	var exit *sys.ExitError
	require.True(t, err == nil || errors.As(err, &exit) && exit.ExitCode() == 0, "%v", err)
	require.Equal(t, "symlink 0\nread 0 secret\nwrite 0\ntrunc 0\ncreate 0\nlink 0 \nmkdir 0\nstat 0\n", stdout.String())
	content, err := os.ReadFile(l.Secret)
	require.NoError(t, err)
	require.Equal(t, "", string(content)) // "pwned", then truncated
	_, err = os.Stat(filepath.Join(l.Top, "created.txt"))
	require.NoError(t, err)
}

// A guest that opens files without closing them gets EAGAIN at
// MaxOpenFiles, and every descriptor is given back when the run ends: the
// runner's descriptors are not the guest's to spend.
func TestMountOpenFilesCapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt, mod := fixtureRuntime(t, "mount_fdhog")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600))

	countFDs := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(ents)
	}
	for range 3 { // the cap holds run after run: nothing leaks
		out, err := rt.Run(ctx, mod, Spec{Mounts: []Mount{{HostPath: dir, GuestPath: "/data"}}})
		require.NoError(t, err)
		require.Equal(t, KindSucceeded, out.Kind, "%s", out)
		require.Len(t, out.Stdout, 8)
		opened, errno := binary.LittleEndian.Uint32(out.Stdout), binary.LittleEndian.Uint32(out.Stdout[4:])
		require.EqualValues(t, mountfs.MaxOpenFiles-1, opened, "the preopened mount directory is one of them")
		require.EqualValues(t, 6, errno, "WASI errno 6 is EAGAIN")
	}
	require.Less(t, countFDs(), mountfs.MaxOpenFiles, "the runs' descriptors were closed")
}

func TestMountCountCapped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := Spec{}
	for i := range maxMounts + 1 {
		s.Mounts = append(s.Mounts, Mount{HostPath: dir, GuestPath: fmt.Sprintf("/m%d", i)})
	}
	require.ErrorContains(t, s.Validate(), "at most 16")
	s.Mounts = s.Mounts[:maxMounts]
	require.NoError(t, s.Validate())
}

// fixtureRuntime is a runtime of the default Config, closed when the test
// ends, and the .wat fixture name (internal/testwasm/wat) compiled in it.
func fixtureRuntime(t *testing.T, name string) (*Runtime, *Module) {
	t.Helper()
	ctx := context.Background()
	rt, err := New(ctx, Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(ctx)) })
	mod, err := rt.Compile(ctx, wat.MustLoad(name))
	require.NoError(t, err)
	return rt, mod
}
