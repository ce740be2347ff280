//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/stint-run/stint/tasks"
)

// lockFile takes an exclusive, non-blocking flock on path (creating it) and
// writes the process id into it. The lock lasts until the file is closed.
func lockFile(path, store string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open lock file %s: %w", path, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		holder := ""
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
				holder = fmt.Sprintf(" (by pid %d)", pid)
			}
		}
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: lock file %s is held%s; another `runner serve` is probably running on %s",
				tasks.ErrLocked, path, holder, store)
		}
		return nil, fmt.Errorf("sqlite: lock %s: %w", path, err)
	}
	// Best effort: the pid only improves the message a second runner sees.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
