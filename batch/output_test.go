package batch

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
)

// TestOutDirWrite: an output is written whole under its name, an existing
// one replaced, with the unnamed file and link (Linux; with one syncfs per
// group or an fsync per file) and with a named temporary file and rename;
// none leaves anything else in the folder.
func TestOutDirWrite(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		named bool
		mode  string
		// procPath: linked through /proc/self/fd (as where linkat's
		// AT_EMPTY_PATH is refused), not by the descriptor.
		procPath bool
	}{{false, SyncAuto, false}, {false, SyncFile, false}, {true, SyncAuto, false}, {false, SyncAuto, true}} {
		t.Run(fmt.Sprintf("named=%v/sync=%s/proc=%v", c.named, c.mode, c.procPath), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			o, removed, err := openOutDir(dir, c.mode, nil)
			require.NoError(t, err)
			require.Zero(t, removed)
			if c.named {
				o.noLink.Store(true)
			}
			if c.procPath {
				o.noEmptyPath.Store(true)
			}
			if c.mode == SyncFile {
				require.False(t, o.usesSyncfs())
			}
			require.NoError(t, o.write("a.txt", []byte("first\n"), 0o644))
			require.NoError(t, o.write("b.txt", nil, 0o644))
			require.NoError(t, o.write("a.txt", []byte("second, longer\n"), 0o644))
			require.Equal(t, "second, longer\n", string(readFile(t, filepath.Join(dir, "a.txt"))))
			require.Empty(t, readFile(t, filepath.Join(dir, "b.txt")))
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, ents, 2, "only the outputs, no temporary file: %v", ents)
			fi, err := os.Stat(filepath.Join(dir, "a.txt"))
			require.NoError(t, err)
			require.Zero(t, fi.Mode().Perm()&0o133, "created 0644 less the umask: %v", fi.Mode())

			// The mode given (an input's & 0666), never wider: a private
			// input's output is private, whether new or replacing one.
			require.NoError(t, o.write("private.txt", []byte("secret\n"), 0o600))
			require.NoError(t, o.write("a.txt", []byte("third\n"), 0o600))
			for _, name := range []string{"private.txt", "a.txt"} {
				fi, err := os.Stat(filepath.Join(dir, name))
				require.NoError(t, err)
				require.Zero(t, fi.Mode().Perm()&0o177, "%s: created 0600 less the umask: %v", name, fi.Mode())
			}

			// A link in the folder under an output's name is replaced,
			// never written through.
			target := filepath.Join(t.TempDir(), "target")
			require.NoError(t, os.WriteFile(target, []byte("untouched"), 0o644))
			require.NoError(t, os.Symlink(target, filepath.Join(dir, "link.txt")))
			require.NoError(t, o.write("link.txt", []byte("output\n"), 0o644))
			require.Equal(t, "untouched", string(readFile(t, target)))
			fi, err = os.Lstat(filepath.Join(dir, "link.txt"))
			require.NoError(t, err)
			require.True(t, fi.Mode().IsRegular(), "the link was replaced by the output")
			require.NoError(t, os.Remove(filepath.Join(dir, "private.txt")))
			require.NoError(t, os.Remove(filepath.Join(dir, "link.txt")))
			if runtime.GOOS == "linux" && !c.named {
				require.False(t, o.noLink.Load(), "linked on Linux (O_TMPFILE on this file system)")
			}
		})
	}
}

// TestOutDirWriteFiles: a group of files, some new and one replacing an
// existing file, is written whole with one barrier: one syncfs for the
// group where the file system honours it.
func TestOutDirWriteFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f3.txt"), []byte("old"), 0o644))
	o, _, err := openOutDir(dir, SyncAuto, nil)
	require.NoError(t, err)
	var files []outputFile
	for i := range 100 {
		files = append(files, outputFile{name: fmt.Sprintf("f%d.txt", i), data: fmt.Appendf(nil, "output %d\n", i), perm: 0o644})
	}
	errs := o.writeFiles(files)
	require.Len(t, errs, len(files))
	for i, err := range errs {
		require.NoError(t, err, files[i].name)
		require.Equal(t, string(files[i].data), string(readFile(t, filepath.Join(dir, files[i].name))))
	}
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, len(files), "only the outputs, no temporary file")
	if ok, why := syncfsHonoured(dir); ok {
		require.True(t, o.usesSyncfs())
		require.EqualValues(t, 1, o.syncfsCalls.Load(), "one syncfs for the group")
	} else {
		t.Logf("each file fsynced here: %s", why)
		require.False(t, o.usesSyncfs())
	}
}

// TestKernelAtLeast: the running kernel is compared by major and minor.
func TestKernelAtLeast(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	require.True(t, kernelAtLeast(2, 6))
	require.False(t, kernelAtLeast(999, 0))
}

// TestOutDirSyncfsErrorFallsBack: when syncfs reports an error (EIO, a
// writeback error somewhere on the file system), each file of the group
// is fsynced instead, and every output is still written whole.
func TestOutDirSyncfsErrorFallsBack(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("syncfs is Linux's")
	}
	dir := t.TempDir()
	o, _, err := openOutDir(dir, SyncFile, nil)
	require.NoError(t, err)
	o.syncfs = func(int) error { return syscall.EIO }
	errs := o.writeFiles([]outputFile{{name: "a.txt", data: []byte("a\n"), perm: 0o644}, {name: "b.txt", data: []byte("b\n"), perm: 0o644}})
	require.Equal(t, []error{nil, nil}, errs)
	require.EqualValues(t, 1, o.syncfsCalls.Load())
	require.Equal(t, "a\n", string(readFile(t, filepath.Join(dir, "a.txt"))))
	require.Equal(t, "b\n", string(readFile(t, filepath.Join(dir, "b.txt"))))
}

// readFile is internal/testutil's ReadFile, by the name the tests use.
var readFile = testutil.ReadFile
