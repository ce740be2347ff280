package sqlite_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/stint-run/stint/internal/fsutil"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// TestOpenCreatesPrivateFiles: the directories Open creates are 0700 and
// the database, its -wal and -shm files and its lock file 0600, under the
// usual umask and under umask 0 alike. Not parallel: the umask is the
// process's.
func TestOpenCreatesPrivateFiles(t *testing.T) {
	for _, umask := range []int{0o022, 0} {
		old := syscall.Umask(umask)
		root := t.TempDir()
		path := filepath.Join(root, "a", "b", "stint.db")
		s, err := sqlite.Open(context.Background(), path, sqlite.Options{Exclusive: true})
		syscall.Umask(old)
		require.NoError(t, err)
		sha, err := s.PutModule(context.Background(), wasm)
		require.NoError(t, err)
		_, _, err = s.Submit(context.Background(), tasks.Spec{Module: sha}) // the WAL has frames
		require.NoError(t, err)
		modes := map[string]fs.FileMode{}
		for _, p := range append(sqlite.StoreFiles(path), filepath.Join(root, "a"), filepath.Join(root, "a", "b")) {
			fi, err := os.Stat(p)
			require.NoError(t, err, "umask %#o", umask)
			modes[strings.TrimPrefix(p, root)] = fi.Mode().Perm()
		}
		require.Equal(t, map[string]fs.FileMode{
			"/a": 0o700, "/a/b": 0o700,
			"/a/b/stint.db": 0o600, "/a/b/stint.db-wal": 0o600, "/a/b/stint.db-shm": 0o600, "/a/b/stint.db.lock": 0o600,
		}, modes, "umask %#o", umask)
		require.Empty(t, fsutil.WideFiles(sqlite.StoreFiles(path)...))
		require.NoError(t, s.Close())
	}
}

// TestOpenWarnsOnWideFiles: an existing store whose files other users may
// read is opened, with a warning that says how to fix it; its modes are
// left alone.
func TestOpenWarnsOnWideFiles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	require.NoError(t, open(t, path, sqlite.Options{}).Close())
	core, logs := observer.New(zapcore.WarnLevel)
	open(t, path, sqlite.Options{Logger: zap.New(core)})
	require.Zero(t, logs.Len(), "a private store: no warning")

	require.NoError(t, os.Chmod(path, 0o644))
	open(t, path, sqlite.Options{Logger: zap.New(core)})
	require.Equal(t, 1, logs.Len())
	e := logs.All()[0]
	require.Contains(t, e.Message, "store files are readable by other users")
	require.Contains(t, e.Message, "chmod 600 "+path)
	require.Contains(t, e.ContextMap()["files"], path+" (0644)")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o644), fi.Mode().Perm())
}
