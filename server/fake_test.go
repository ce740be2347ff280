package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/stint-run/stint/tasks"
)

// fakeStore is an in-memory tasks.Store for the HTTP-shape tests: enough
// of the contract for the endpoints (modules, submit, get, list, attempts,
// cancel, retry); the worker-side methods, and the rest (fakeRest), are
// not implemented. fail, when set, is returned by every method it
// implements; panicky makes Get and List panic.
type fakeStore struct {
	fakeRest
	mu       sync.Mutex
	modules  map[string][]byte
	tasks    map[int64]*tasks.Task
	attempts map[int64][]tasks.Attempt
	keys     map[string]int64
	nextID   int64
	fail     error
	panicky  bool
}

func newFakeStore() *fakeStore {
	return &fakeStore{
		modules:  map[string][]byte{},
		tasks:    map[int64]*tasks.Task{},
		attempts: map[int64][]tasks.Attempt{},
		keys:     map[string]int64{},
	}
}

var errNotImplemented = errors.New("fake store: not implemented")

func (f *fakeStore) PutModule(_ context.Context, wasm []byte) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return "", f.fail
	}
	sum := sha256.Sum256(wasm)
	h := hex.EncodeToString(sum[:])
	f.modules[h] = append([]byte(nil), wasm...)
	return h, nil
}

func (f *fakeStore) Module(_ context.Context, h string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	b, ok := f.modules[h]
	if !ok {
		return nil, fmt.Errorf("fake: module %s: %w", h, tasks.ErrModuleNotFound)
	}
	return b, nil
}

func (f *fakeStore) Submit(_ context.Context, spec tasks.Spec) (tasks.Task, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return tasks.Task{}, false, f.fail
	}
	if err := spec.Validate(); err != nil {
		return tasks.Task{}, false, fmt.Errorf("fake: submit: %w", err)
	}
	if _, ok := f.modules[spec.Module]; !ok {
		return tasks.Task{}, false, fmt.Errorf("fake: submit: %w: %s", tasks.ErrModuleNotFound, spec.Module)
	}
	if spec.IdempotencyKey != "" {
		if id, ok := f.keys[spec.IdempotencyKey]; ok {
			return *f.tasks[id], true, nil
		}
	}
	f.nextID++
	now := time.Now().UTC()
	t := &tasks.Task{ID: f.nextID, Spec: spec.WithDefaults(), State: tasks.StateQueued, CheckpointSize: -1,
		InputSize: len(spec.Input), CreatedAt: now, UpdatedAt: now}
	f.tasks[t.ID] = t
	if spec.IdempotencyKey != "" {
		f.keys[spec.IdempotencyKey] = t.ID
	}
	return *t, false, nil
}

func (f *fakeStore) Get(_ context.Context, id int64) (tasks.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panicky {
		panic("fake store: Get panicked")
	}
	if f.fail != nil {
		return tasks.Task{}, f.fail
	}
	t, ok := f.tasks[id]
	if !ok {
		return tasks.Task{}, fmt.Errorf("fake: task %d: %w", id, tasks.ErrNotFound)
	}
	return *t, nil
}

func (f *fakeStore) List(_ context.Context, lf tasks.ListFilter) ([]tasks.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panicky {
		panic("fake store: List panicked")
	}
	if f.fail != nil {
		return nil, f.fail
	}
	ids := make([]int64, 0, len(f.tasks))
	for id := range f.tasks {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	limit := lf.Limit
	if limit <= 0 {
		limit = 100
	}
	out := []tasks.Task{}
	for _, id := range ids {
		t := f.tasks[id]
		if id <= lf.AfterID || (lf.State != "" && t.State != lf.State) || (lf.Queue != "" && t.Queue != lf.Queue) {
			continue
		}
		if len(out) == limit {
			break
		}
		listed := *t
		listed.Input, listed.Result = nil, nil // as tasks.Store.List
		out = append(out, listed)
	}
	return out, nil
}

func (f *fakeStore) Attempts(_ context.Context, id int64) ([]tasks.Attempt, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	if _, ok := f.tasks[id]; !ok {
		return nil, fmt.Errorf("fake: attempts of task %d: %w", id, tasks.ErrNotFound)
	}
	return f.attempts[id], nil
}

func (f *fakeStore) Checkpoint(context.Context, int64) ([]byte, error) { return nil, errNotImplemented }
func (f *fakeStore) Claim(context.Context, tasks.ClaimRequest) ([]tasks.Claimed, error) {
	return nil, errNotImplemented
}
func (f *fakeStore) Heartbeat(context.Context, []tasks.Lease, time.Duration) ([]tasks.Lease, []tasks.Lease, error) {
	return nil, nil, errNotImplemented
}
func (f *fakeStore) SaveCheckpoint(context.Context, tasks.Lease, []byte) error {
	return errNotImplemented
}
func (f *fakeStore) Progress(context.Context, tasks.Lease, int64, int64) error {
	return errNotImplemented
}
func (f *fakeStore) MarkBegun(context.Context, []tasks.Lease) error {
	return errNotImplemented
}
func (f *fakeStore) Complete(context.Context, []tasks.Completion) ([]error, error) {
	return nil, errNotImplemented
}
func (f *fakeStore) RecoverRunning(context.Context, int) (int, error) { return 0, errNotImplemented }
func (f *fakeStore) Release(context.Context, []tasks.Lease) error     { return errNotImplemented }
func (f *fakeStore) Close() error                                     { return nil }

func (f *fakeStore) Cancel(_ context.Context, id int64) (tasks.Task, error) {
	return f.transition(id, "cancel", func(t *tasks.Task) bool {
		switch t.State {
		case tasks.StateQueued:
			t.State = tasks.StateCancelled
		case tasks.StateRunning:
			t.CancelRequested = true
		default:
			return false
		}
		return true
	})
}

func (f *fakeStore) Retry(_ context.Context, id int64) (tasks.Task, error) {
	return f.transition(id, "retry", func(t *tasks.Task) bool {
		if t.State != tasks.StateDead && t.State != tasks.StateCancelled {
			return false
		}
		t.State, t.Failures, t.CancelRequested = tasks.StateQueued, 0, false
		return true
	})
}

func (f *fakeStore) transition(id int64, op string, fn func(*tasks.Task) bool) (tasks.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return tasks.Task{}, f.fail
	}
	t, ok := f.tasks[id]
	if !ok {
		return tasks.Task{}, fmt.Errorf("fake: %s task %d: %w", op, id, tasks.ErrNotFound)
	}
	if !fn(t) {
		return tasks.Task{}, fmt.Errorf("fake: %s task %d (%s): %w", op, id, t.State, tasks.ErrInvalidState)
	}
	t.UpdatedAt = time.Now().UTC()
	return *t, nil
}

// set changes a stored task in place (to put it in a state the API cannot).
func (f *fakeStore) set(id int64, fn func(*tasks.Task)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f.tasks[id])
}

func (f *fakeStore) setFail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

var _ tasks.Store = (*fakeStore)(nil)
