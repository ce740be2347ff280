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
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox/internal/mountfs"
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

// A guest that opens a FIFO the host left in its mount (stopping_fifo)
// gets an error at once and ends on its own, well within its timeout: no
// run is abandoned, no goroutine strays.
func TestMountFIFOGuestEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt, mod := fixtureRuntime(t, "stopping_fifo")
	dir := testutil.SpecialDir(t)
	for _, writable := range []bool{false, true} {
		out, err := rt.Run(ctx, mod, Spec{Limits: Limits{Timeout: time.Hour},
			Mounts: []Mount{{HostPath: dir, GuestPath: "/data", Writable: writable}}})
		require.NoError(t, err)
		require.Equal(t, KindFailed, out.Kind, "%s", out)
		require.EqualValues(t, 1, out.ExitCode, "the guest's open failed")
		require.False(t, out.Abandoned)
	}
	st := rt.Stats()
	require.Zero(t, st.Stray)
	require.Zero(t, st.Abandoned)
}
