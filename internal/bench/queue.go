package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// openWithModule opens the store at path for this process alone
// (sqlite.Options.Exclusive) and stores wasm in it; it returns the store
// and the module's SHA-256.
func openWithModule(ctx context.Context, path string, wasm []byte) (*sqlite.Store, string, error) {
	store, err := sqlite.Open(ctx, path, sqlite.Options{Exclusive: true})
	if err != nil {
		return nil, "", err
	}
	sha, err := store.PutModule(ctx, wasm)
	if err != nil {
		_ = store.Close()
		return nil, "", err
	}
	return store, sha, nil
}

// enqueue creates the store at path with n tasks of wasm and closes it;
// it returns the submit rate (tasks/s, one Submit per transaction).
func enqueue(ctx context.Context, path string, wasm, input []byte, n int) (float64, error) {
	store, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return 0, err
	}
	sha, err := store.PutModule(ctx, wasm)
	if err != nil {
		return 0, errors.Join(err, store.Close())
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, _, err := store.Submit(ctx, tasks.Spec{Module: sha, Input: input}); err != nil {
			return 0, errors.Join(err, store.Close())
		}
	}
	rate := float64(n) / time.Since(start).Seconds()
	return rate, store.Close()
}

// copyStore copies the store file at src (and its WAL, if any) into dir.
func copyStore(src, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	ents, err := os.ReadDir(filepath.Dir(src))
	if err != nil {
		return "", err
	}
	base := filepath.Base(src)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), base) || strings.HasSuffix(e.Name(), ".lock") || e.IsDir() { // a store's snapshots directory: the benchmarks store none
			continue
		}
		if err := copyFile(filepath.Join(filepath.Dir(src), e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, base), nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// drain opens the store at path (exclusively, as `runner serve` does),
// runs a pool of cfg until n tasks have finished, checks that every
// one succeeded, and returns the time from Start to the last one recorded,
// with the pool's store calls.
func drain(ctx context.Context, path string, rt *sandbox.Runtime, cfg pool.Config, n int) (time.Duration, storeCounts, error) {
	store, err := sqlite.Open(ctx, path, sqlite.Options{Exclusive: true})
	if err != nil {
		return 0, storeCounts{}, err
	}
	defer store.Close()
	cs := &countingStore{Store: store}
	pool, err := pool.New(cs, rt, cfg)
	if err != nil {
		return 0, storeCounts{}, err
	}
	start := time.Now()
	if err := pool.Start(ctx); err != nil {
		return 0, storeCounts{}, err
	}
	deadline := start.Add(5 * time.Minute)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for pool.Stats().Finished < n {
		select {
		case <-tick.C:
		case <-ctx.Done():
			_ = pool.Stop(context.Background())
			return 0, storeCounts{}, ctx.Err()
		}
		if time.Now().After(deadline) {
			_ = pool.Stop(context.Background())
			return 0, storeCounts{}, fmt.Errorf("durable: %d of %d tasks finished in 5 minutes", pool.Stats().Finished, n)
		}
	}
	elapsed := time.Since(start)
	counts := cs.counts()
	if err := pool.Stop(ctx); err != nil {
		return 0, storeCounts{}, err
	}
	if err := allSucceeded(ctx, store); err != nil {
		return 0, storeCounts{}, err
	}
	return elapsed, counts, nil
}

// allSucceeded checks that no task of the store is queued, running or dead.
func allSucceeded(ctx context.Context, store tasks.Store) error {
	for _, st := range []tasks.State{tasks.StateQueued, tasks.StateRunning, tasks.StateDead} {
		left, err := store.List(ctx, tasks.ListFilter{State: st, Limit: 1})
		if err != nil {
			return err
		}
		if len(left) > 0 {
			return fmt.Errorf("durable: task %d is %s after the run, want every task succeeded", left[0].ID, st)
		}
	}
	return nil
}

// storeOnly moves the n tasks of the store at path through Claim and
// Complete in batches of `batch`, with no pool and no guest: the store's
// own ceiling. It returns the elapsed time.
func storeOnly(ctx context.Context, path string, batch, n int) (time.Duration, error) {
	store, err := sqlite.Open(ctx, path, sqlite.Options{Exclusive: true})
	if err != nil {
		return 0, err
	}
	defer store.Close()
	req := tasks.ClaimRequest{Owner: "stintbench", Max: batch, Lease: time.Minute}
	cs := make([]tasks.Completion, 0, batch)
	start := time.Now()
	for done := 0; done < n; {
		cl, err := store.Claim(ctx, req)
		if err != nil {
			return 0, err
		}
		if len(cl) == 0 {
			return 0, fmt.Errorf("durable: store ran out of tasks after %d of %d", done, n)
		}
		cs = cs[:0]
		for _, c := range cl {
			cs = append(cs, tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded,
				Attempt: tasks.Attempt{StartedAt: time.Now(), Outcome: "succeeded"}})
		}
		errs, err := store.Complete(ctx, cs)
		if err = errors.Join(append(errs, err)...); err != nil {
			return 0, err
		}
		done += len(cl)
	}
	elapsed := time.Since(start)
	return elapsed, allSucceeded(ctx, store)
}

// durableRound enqueues n tasks of wasm in a fresh store and drains it with
// a pool of `workers`; it returns tasks/s. rt must have compiled wasm.
func durableRound(ctx context.Context, rt *sandbox.Runtime, wasm, input []byte, n, workers int) (float64, error) {
	dir, err := os.MkdirTemp("", "stintbench-round-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "stint.db")
	if _, err := enqueue(ctx, path, wasm, input, n); err != nil {
		return 0, err
	}
	d, _, err := drain(ctx, path, rt, pool.Config{Workers: workers}, n)
	if err != nil {
		return 0, err
	}
	return float64(n) / d.Seconds(), nil
}

// startLatency runs a pool of 2 workers on a fresh store at path and
// submits n tasks of wasm one at a time, one every 5 ms: via "pool"
// through Pool.Submit (which wakes the pool); via "store" through a second
// Store on the same file, as another process would (the pool finds them at
// its next poll); via "store-wake" the same, with the pool's store
// listening for wake-ups as runner serve does. It records each task's
// enqueue-to-start and submit-to-finish times.
func startLatency(ctx context.Context, path string, rt *sandbox.Runtime, wasm []byte, n int, via string, start, e2e *Series) error {
	store, sha, err := openWithModule(ctx, path, wasm)
	if err != nil {
		return err
	}
	defer store.Close()
	pool, err := pool.New(store, rt, pool.Config{Workers: 2})
	if err != nil {
		return err
	}
	if err := pool.Start(ctx); err != nil {
		return err
	}
	defer pool.Stop(ctx)
	submit := func(ctx context.Context, spec tasks.Spec) (tasks.Task, bool, error) { return pool.Submit(ctx, spec) }
	if via != "pool" {
		other, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			return err
		}
		defer other.Close()
		submit = other.Submit
	}
	if via == "store-wake" {
		wakeups, stop, err := store.ListenWakeups()
		if err != nil {
			return err
		}
		defer stop()
		pool.WakeOn(wakeups)
	}
	ids := make([]int64, 0, n)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < n; i++ {
		<-tick.C
		t, _, err := submit(ctx, tasks.Spec{Module: sha})
		if err != nil {
			return err
		}
		ids = append(ids, t.ID)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, id := range ids {
		t, err := pool.Wait(wctx, id)
		if err != nil {
			return err
		}
		if t.State != tasks.StateSucceeded {
			return fmt.Errorf("durable: task %d ended %s: %s", id, t.State, t.LastError)
		}
		atts, err := store.Attempts(ctx, id)
		if err != nil {
			return err
		}
		if len(atts) == 0 {
			return fmt.Errorf("durable: task %d has no attempt record", id)
		}
		start.AddDuration(atts[0].StartedAt.Sub(t.CreatedAt))
		e2e.AddDuration(t.FinishedAt.Sub(t.CreatedAt))
	}
	return nil
}
