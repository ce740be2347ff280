package main

import (
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/stint-run/stint/internal/fsutil"
)

// The data directory holds the store (task inputs, results, env values)
// and the compilation cache: it and the cache are the runner user's alone
// (0700, whatever the umask), as are the store's files (0600, see
// sqlite.Open). wazero creates its cache entries 0600 in directories 0700.

// dataDirs makes the data directory and its compilation cache, 0700 when
// it creates them, once per command, and warns when either is open to
// other users.
type dataDirs struct {
	once sync.Once
	err  error
}

// ensureDataDir creates data_dir if missing (0700) and warns, with the
// fix, when it exists with a wider mode. Its cache folder is
// compileCacheDir's to make.
func (a *app) ensureDataDir() error {
	a.dirs.once.Do(func() {
		if err := fsutil.MkdirPrivate(a.cfg.DataDir); err != nil {
			a.dirs.err = fmt.Errorf("data_dir %s: %w", a.cfg.DataDir, err)
			return
		}
		if wide := fsutil.WideFiles(a.cfg.DataDir); len(wide) > 0 {
			a.log.Warn("the data directory is open to other users, and it holds task inputs, results and env values; "+
				"fix: chmod 700 "+a.cfg.DataDir, zap.Strings("dirs", wide))
		}
	})
	return a.dirs.err
}
