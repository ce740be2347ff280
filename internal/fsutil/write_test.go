package fsutil

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// writers are WriteFile and WriteFileIn, each writing name in dir.
func writers(t *testing.T, dir string) map[string]func(name string, data []byte, o Options) error {
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = root.Close() })
	return map[string]func(string, []byte, Options) error{
		"WriteFile": func(name string, data []byte, o Options) error {
			return WriteFile(filepath.Join(dir, name), data, 0o600, o)
		},
		"WriteFileIn": func(name string, data []byte, o Options) error {
			return WriteFileIn(root, name, data, 0o600, o)
		},
	}
}

// TestWriteIsAtomic: readers reading while the file is replaced again and
// again see one whole version or the other, never part of one, and the
// directory holds nothing else once the writes are done.
func TestWriteIsAtomic(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"WriteFile", "WriteFileIn"} {
		dir := t.TempDir()
		write := writers(t, dir)[name]
		t.Run(name, func(t *testing.T) {
			a, b := bytes.Repeat([]byte("a"), 1<<20), bytes.Repeat([]byte("b"), 1<<20+1)
			require.NoError(t, write("f", a, Options{}))
			var stop atomic.Bool
			var wg sync.WaitGroup
			var reads atomic.Int64
			bad := make(chan string, 4)
			for range 2 {
				wg.Go(func() {
					for !stop.Load() {
						got, err := os.ReadFile(filepath.Join(dir, "f"))
						if err != nil {
							bad <- err.Error()
							return
						}
						if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
							bad <- "a partial file"
							return
						}
						reads.Add(1)
					}
				})
			}
			for i := range 40 {
				data := a
				if i%2 == 0 {
					data = b
				}
				require.NoError(t, write("f", data, Options{NoDirSync: i%4 != 0}))
			}
			stop.Store(true)
			wg.Wait()
			close(bad)
			for msg := range bad {
				t.Fatal(msg)
			}
			require.Positive(t, reads.Load())
			got, err := os.ReadFile(filepath.Join(dir, "f"))
			require.NoError(t, err)
			require.Equal(t, a, got)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "no temporary file left: %v", entries)
		})
	}
}

// TestWriteSyncsTheDirectory: after the rename the directory is fsynced,
// once; Options.SyncDir replaces that fsync and Options.NoDirSync skips
// it. Not parallel: it counts fsyncDir's calls.
func TestWriteSyncsTheDirectory(t *testing.T) {
	dir := t.TempDir()
	var synced []string
	old := fsyncDir
	fsyncDir = func(f *os.File) error {
		synced = append(synced, f.Name())
		return old(f)
	}
	t.Cleanup(func() { fsyncDir = old })
	for name, write := range writers(t, dir) {
		synced = nil
		require.NoError(t, write(name, []byte("x"), Options{}))
		require.Len(t, synced, 1, name)
		fi, err := os.Stat(synced[0])
		require.NoError(t, err)
		require.True(t, fi.IsDir(), "%s synced %s", name, synced[0])
		same, err := os.Stat(dir)
		require.NoError(t, err)
		require.True(t, os.SameFile(fi, same), "%s synced %s, not %s", name, synced[0], dir)

		synced = nil
		called := 0
		require.NoError(t, write(name, []byte("y"), Options{SyncDir: func() error { called++; return nil }}))
		require.Equal(t, 1, called, name)
		require.NoError(t, write(name, []byte("z"), Options{NoDirSync: true}))
		require.Empty(t, synced, name)
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Equal(t, "z", string(got))
	}
}

// TestWriteFailureLeavesTheFile: a write that fails leaves the file as it
// was and no temporary file.
func TestWriteFailureLeavesTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, write := range writers(t, dir) {
		require.NoError(t, write(name, []byte("old"), Options{}))
		// The temporary name is taken: nothing is written.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "taken"), nil, 0o600))
		require.Error(t, write(name, []byte("new"), Options{TempName: "taken"}))
		// The rename fails (the destination is a directory that is not
		// empty): the temporary file is removed.
		require.NoError(t, os.MkdirAll(filepath.Join(dir, name+".d", "x"), 0o700))
		require.Error(t, write(name+".d", []byte("new"), Options{TempName: name + ".tmp"}))
		require.NoFileExists(t, filepath.Join(dir, name+".tmp"))
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Equal(t, "old", string(got))
	}
}

// TestWriteFileInReplacesASymlink: a symlink where the file was is
// replaced, never followed: the file it leads to is untouched.
func TestWriteFileInReplacesASymlink(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), filepath.Join(t.TempDir(), "host")
	require.NoError(t, os.WriteFile(outside, []byte("host"), 0o600))
	if err := os.Symlink(outside, filepath.Join(dir, "f")); err != nil {
		t.Skip("no symlinks:", err)
	}
	require.NoError(t, writers(t, dir)["WriteFileIn"]("f", []byte("mine"), Options{}))
	got, err := os.ReadFile(outside)
	require.NoError(t, err)
	require.Equal(t, "host", string(got))
	fi, err := os.Lstat(filepath.Join(dir, "f"))
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular())
}
