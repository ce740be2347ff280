package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/storeurl"
	"go.uber.org/zap"
)

// openStore opens the configured store by its URL (package storeurl).
// exclusive is for `runner serve`: one runner per SQLite data directory.
func (a *app) openStore(ctx context.Context, exclusive bool) (tasks.Store, error) {
	if a.cfg.Store == "" { // the store lives in the data directory
		if err := a.ensureDataDir(); err != nil {
			return nil, err
		}
	}
	if _, _, err := storeurl.Parse(a.cfg.storeURL()); err != nil {
		return nil, usageErrorf("store: %v", err)
	}
	s, err := storeurl.Open(ctx, a.cfg.storeURL(), storeurl.Options{Exclusive: exclusive, Logger: a.log.Named("store"), Sync: a.cfg.StoreSync,
		MaxSchedules: a.cfg.MaxSchedules})
	if err != nil {
		if errors.Is(err, tasks.ErrLocked) && exclusive {
			return nil, &exitError{code: exitInternal, err: fmt.Errorf("%w\nis another `runner serve` running on data_dir %s? Stop it, or give this one its own --data-dir", err, a.cfg.DataDir)}
		}
		return nil, err
	}
	return s, nil
}

// withStore runs fn on a non-exclusive store, closing it after; the
// store is created if missing (submit).
func (a *app) withStore(cmd *cobra.Command, fn func(ctx context.Context, s tasks.Store) error) error {
	return a.useStore(cmd, false, fn)
}

// withExistingStore is withStore for the commands that only act on tasks
// already stored (tasks list, show, result, cancel, retry, prune): a
// SQLite store that does not exist is an error (exitNotFound), and
// nothing is created, neither the data directory nor the database.
func (a *app) withExistingStore(cmd *cobra.Command, fn func(ctx context.Context, s tasks.Store) error) error {
	return a.useStore(cmd, true, fn)
}

func (a *app) useStore(cmd *cobra.Command, mustExist bool, fn func(ctx context.Context, s tasks.Store) error) error {
	ctx := cmd.Context()
	if mustExist {
		if err := a.storeExists(); err != nil {
			return err
		}
	}
	s, err := a.openStore(ctx, false)
	if err != nil {
		return err
	}
	return errors.Join(fn(ctx, s), s.Close())
}

// ErrNoStore is the error of a command that reads tasks when the SQLite
// store does not exist.
var ErrNoStore = errors.New("no store")

// storeExists reports, for a SQLite store, whether its file exists
// (exitNotFound if not). A PostgreSQL store is the server's business.
func (a *app) storeExists() error {
	kind, path, err := storeurl.Parse(a.cfg.storeURL())
	if err != nil {
		return usageErrorf("store: %v", err)
	}
	if kind != storeurl.SQLite {
		return nil
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		hint := "nothing submitted yet?"
		if a.cfg.Store == "" {
			path = strings.TrimRight(a.cfg.DataDir, "/") + "/stint.db" // as configured: ./stint-data/stint.db
			hint += " Or give the data directory of your runner serve: --data-dir or RUNNER_DATA_DIR"
		}
		return &exitError{code: exitNotFound, err: fmt.Errorf("%w at %s (%s)", ErrNoStore, path, hint)}
	}
	return nil
}

// warnIfNobodyServes says so when no `runner serve` works the store (on
// Linux, where that is known without taking its lock): a queued task
// waits until one starts.
func (a *app) warnIfNobodyServes(s tasks.Store) {
	li, ok := s.(tasks.LockInspector)
	if !ok {
		return
	}
	if _, held, err := li.LockHolder(); err == nil && !held {
		a.log.Warn("no runner serve is working this store: the task waits in the queue until one starts "+
			"(runner serve, with the same data_dir or store)", zap.String("store", storeurl.Redact(a.cfg.storeURL())))
	}
}
