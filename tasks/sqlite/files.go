package sqlite

import (
	"strings"

	"go.uber.org/zap"

	"github.com/stint-run/stint/internal/fsutil"
)

// The store holds task inputs, results, checkpoints and env values
// (secrets, often): its files are the runner user's alone, whatever the
// umask (package internal/fsutil has the data directory's modes).
const (
	// FileMode is the mode Open gives the database file it creates; SQLite
	// gives the -wal and -shm files it creates later the database file's
	// mode, and the lock file is created with it too.
	FileMode = fsutil.PrivateFileMode
	// DirMode is the mode Open gives the directories it creates for the
	// database file.
	DirMode = fsutil.PrivateDirMode
)

// StoreFiles are the files of the store at path: the database, its -wal
// and -shm files and its lock file (some may not exist).
func StoreFiles(path string) []string {
	return []string{path, path + "-wal", path + "-shm", path + ".lock"}
}

// warnWideFiles logs a warning when a file of the store is open to other
// users, with the command that fixes it.
func (s *Store) warnWideFiles() {
	wide := fsutil.WideFiles(StoreFiles(s.path)...)
	if len(wide) == 0 {
		return
	}
	s.log.Warn("store files are readable by other users, and they hold task inputs, results and env values; "+
		"fix: chmod 600 "+strings.Join(StoreFiles(s.path), " "),
		zap.Strings("files", wide))
}
