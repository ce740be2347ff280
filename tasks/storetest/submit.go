package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// Modules and Submit: content addressing, validation, the round trip of
// every field, idempotency keys.

func testModules(t *testing.T, e *env) {
	b := []byte("\x00asm\x01\x00\x00\x00 some other bytes")
	sum := sha256.Sum256(b)
	h1 := e.putModule(b)
	require.Equal(t, hex.EncodeToString(sum[:]), h1)
	h2 := e.putModule(append([]byte(nil), b...))
	require.Equal(t, h1, h2, "same bytes, same module")
	got, err := e.s.Module(e.ctx, h1)
	require.NoError(t, err)
	require.Equal(t, b, got)

	require.NotEqual(t, h1, e.module, "different bytes, different module")
	got, err = e.s.Module(e.ctx, e.module)
	require.NoError(t, err)
	require.Equal(t, wasmHeader, got)

	_, err = e.s.Module(e.ctx, hex.EncodeToString(make([]byte, 32)))
	require.ErrorIs(t, err, tasks.ErrModuleNotFound)
	_, err = e.s.Module(e.ctx, "not-a-hash")
	require.ErrorIs(t, err, tasks.ErrModuleNotFound)
}

func testSubmitUnknownModule(t *testing.T, e *env) {
	_, _, err := e.s.Submit(e.ctx, tasks.Spec{Module: hex.EncodeToString(make([]byte, 32))})
	require.ErrorIs(t, err, tasks.ErrModuleNotFound)
	list, err := e.s.List(e.ctx, tasks.ListFilter{})
	require.NoError(t, err)
	require.Empty(t, list)
}

func testSubmitInvalidSpec(t *testing.T, e *env) {
	for name, mut := range map[string]func(*tasks.Spec){
		"empty module":          func(s *tasks.Spec) { s.Module = "" },
		"short module":          func(s *tasks.Spec) { s.Module = "abc" },
		"non-hex module":        func(s *tasks.Spec) { s.Module = "z" + s.Module[1:] },
		"upper-case module":     func(s *tasks.Spec) { s.Module = "ABCDEF" + s.Module[6:] },
		"negative max attempts": func(s *tasks.Spec) { s.MaxAttempts = -1 },
		"negative memory":       func(s *tasks.Spec) { s.Limits.MemoryBytes = -1 },
		"negative timeout":      func(s *tasks.Spec) { s.Limits.Timeout = -time.Second },
		"negative stdout":       func(s *tasks.Spec) { s.Limits.Stdout = -1 },
		"negative stderr":       func(s *tasks.Spec) { s.Limits.Stderr = -1 },
		"negative checkpoint":   func(s *tasks.Spec) { s.Limits.Checkpoint = -1 },
		"negative disk":         func(s *tasks.Spec) { s.Limits.DiskBytes = -1 },
		"negative disk files":   func(s *tasks.Spec) { s.Limits.DiskFiles = -1 },
		"negative work":         func(s *tasks.Spec) { s.Limits.Work = -1 },
		"env name with =":       func(s *tasks.Spec) { s.Env = map[string]string{"A=B": "c"} },
		"empty env name":        func(s *tasks.Spec) { s.Env = map[string]string{"": "c"} },
		"mount without guest":   func(s *tasks.Spec) { s.Mounts = []tasks.Mount{{HostPath: "/data"}} },
		"relative guest path":   func(s *tasks.Spec) { s.Mounts = []tasks.Mount{{HostPath: "/data", GuestPath: "data"}} },
		"relative host path":    func(s *tasks.Spec) { s.Mounts = []tasks.Mount{{HostPath: "data", GuestPath: "/data"}} },
		"empty label name":      func(s *tasks.Spec) { s.Labels = map[string]string{"": "x"} },
		"label with NUL":        func(s *tasks.Spec) { s.Labels = map[string]string{"a": "x\x00"} },
		"long label value":      func(s *tasks.Spec) { s.Labels = map[string]string{"a": strings.Repeat("x", tasks.MaxLabelValue+1)} },
		"export _start":         func(s *tasks.Spec) { s.Export = "_start" },
		"long export":           func(s *tasks.Spec) { s.Export = strings.Repeat("x", tasks.MaxExportName+1) },
		"unknown on_retry":      func(s *tasks.Spec) { s.OnRetry = "never" },
	} {
		spec := e.spec()
		mut(&spec)
		_, _, err := e.s.Submit(e.ctx, spec)
		require.ErrorIs(t, err, tasks.ErrInvalidSpec, name)
	}
	list, err := e.s.List(e.ctx, tasks.ListFilter{})
	require.NoError(t, err)
	require.Empty(t, list)
}

func testSubmitRoundTrip(t *testing.T, e *env) {
	// Defaults.
	task := e.submit(e.spec())
	require.Positive(t, task.ID)
	require.Equal(t, e.module, task.Module)
	require.Equal(t, tasks.DefaultQueue, task.Queue)
	require.Equal(t, tasks.DefaultMaxAttempts, task.MaxAttempts)
	require.Equal(t, tasks.StateQueued, task.State)
	require.Zero(t, task.Attempt)
	require.Zero(t, task.Failures)
	require.Equal(t, -1, task.CheckpointSize)
	require.Empty(t, task.LeaseOwner)
	require.True(t, task.LeaseExpiry.IsZero())
	require.True(t, task.FinishedAt.IsZero())
	requireTime(t, Start, task.RunAt, "run at defaults to now")
	requireTime(t, Start, task.CreatedAt, "created at")
	requireTime(t, Start, task.UpdatedAt, "updated at")
	require.Equal(t, task, e.get(task.ID), "Get returns what Submit returned")

	// Every field.
	spec := tasks.Spec{
		Module: e.module,
		Input:  []byte("input\x00bytes"),
		Args:   []string{"--flag", "value with spaces", ""},
		Env:    map[string]string{"A": "1", "EMPTY": ""},
		Mounts: []tasks.Mount{{HostPath: "/srv/in", GuestPath: "/in"}, {HostPath: "/srv/out", GuestPath: "/out", Writable: true}},
		Limits: tasks.Limits{MemoryBytes: 64 << 20, Timeout: 90 * time.Second, Stdout: 1 << 20, Stderr: 64 << 10, Checkpoint: 1 << 20,
			DiskBytes: 2 << 30, DiskFiles: 50_000, Work: 5_000_000},
		MaxAttempts:    7,
		Priority:       -3,
		Queue:          "batch",
		IdempotencyKey: "key-1",
		RunAt:          Start.Add(time.Hour),
		Labels:         map[string]string{"tenant": "acme", "job": "nightly report", "empty": ""},
		Export:         "greet",
		OnRetry:        tasks.OnRetryRestart,
	}
	task = e.submit(spec)
	got := e.get(task.ID)
	require.Equal(t, task, got)
	require.Equal(t, spec.Input, got.Input)
	require.Equal(t, spec.Args, got.Args)
	require.Equal(t, spec.Env, got.Env)
	require.Equal(t, spec.Mounts, got.Mounts)
	require.Equal(t, spec.Limits, got.Limits)
	require.Equal(t, 7, got.MaxAttempts)
	require.Equal(t, -3, got.Priority)
	require.Equal(t, "batch", got.Queue)
	require.Equal(t, "key-1", got.IdempotencyKey)
	require.Equal(t, spec.Labels, got.Labels)
	require.Equal(t, "greet", got.Export)
	require.Equal(t, "restart", got.OnRetry)
	requireTime(t, spec.RunAt, got.RunAt, "run at")
	listed, err := e.s.List(e.ctx, tasks.ListFilter{AfterID: task.ID - 1, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, spec.Labels, listed[0].Labels, "List returns the labels")
	require.Equal(t, "greet", listed[0].Export, "List returns the export")
	require.Empty(t, e.get(e.submit(e.spec()).ID).Export, "no export: _start")
}

// testOnRetry: a task's Spec.OnRetry is stored by every way of
// submitting and read back by every read (Get, List, ListNewest, Claim),
// "" (the default, resume) as "", and a value other than "", "resume" and
// "restart" is refused, naming both.
func testOnRetry(t *testing.T, e *env) {
	for _, v := range []string{"Restart", "never", "resume ", "\x00"} {
		spec := e.spec()
		spec.OnRetry = v
		_, _, err := e.s.Submit(e.ctx, spec)
		require.ErrorIs(t, err, tasks.ErrInvalidSpec, "%q", v)
		require.ErrorContains(t, err, `"resume"`)
		require.ErrorContains(t, err, `"restart"`)
		_, err = e.s.SubmitMany(e.ctx, []tasks.Spec{e.spec(), spec})
		require.ErrorIs(t, err, tasks.ErrInvalidSpec, "SubmitMany, %q", v)
	}
	require.Empty(t, e.all(tasks.ListFilter{}), "nothing stored")

	restart := e.submit(tasks.Spec{Module: e.module, OnRetry: tasks.OnRetryRestart})
	resume := e.submit(tasks.Spec{Module: e.module, OnRetry: tasks.OnRetryResume})
	dflt := e.submit(e.spec())
	want := map[int64]string{restart.ID: "restart", resume.ID: "resume", dflt.ID: ""}
	res, err := e.s.SubmitMany(e.ctx, []tasks.Spec{{Module: e.module, OnRetry: tasks.OnRetryRestart}, e.spec()})
	require.NoError(t, err)
	want[res[0].Task.ID], want[res[1].Task.ID] = "restart", ""
	for _, task := range []tasks.Task{restart, resume, dflt, res[0].Task, res[1].Task} {
		require.Equal(t, want[task.ID], task.OnRetry, "as submitted: task %d", task.ID)
		require.Equal(t, want[task.ID], e.get(task.ID).OnRetry, "Get: task %d", task.ID)
	}
	list := e.all(tasks.ListFilter{})
	require.Len(t, list, len(want))
	for _, task := range list {
		require.Equal(t, want[task.ID], task.OnRetry, "List: task %d", task.ID)
	}
	newest, err := e.s.ListNewest(e.ctx, tasks.NewestFilter{})
	require.NoError(t, err)
	require.Len(t, newest, len(want))
	for _, task := range newest {
		require.Equal(t, want[task.ID], task.OnRetry, "ListNewest: task %d", task.ID)
	}
	cl := e.claim("a", 10)
	require.Len(t, cl, len(want))
	for _, c := range cl {
		require.Equal(t, want[c.Task.ID], c.Task.OnRetry, "Claim: task %d", c.Task.ID)
	}
	// A retry's claim too: the attempts end interrupted, the tasks queued again.
	for _, c := range cl {
		require.NoError(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateQueued,
			Attempt: tasks.Attempt{EndedAt: e.clock.Now(), Outcome: "interrupted", ExitCode: 75}}))
	}
	cl = e.claim("b", 10)
	require.Len(t, cl, len(want))
	for _, c := range cl {
		require.Equal(t, 2, c.Task.Attempt)
		require.Equal(t, want[c.Task.ID], c.Task.OnRetry, "second claim: task %d", c.Task.ID)
	}

	if cs, ok := e.s.(tasks.ClaimingSubmitter); ok {
		res, err := cs.SubmitManyClaimed(e.ctx, []tasks.Spec{{Module: e.module, OnRetry: tasks.OnRetryRestart}, e.spec()}, "p", lease)
		require.NoError(t, err)
		require.Equal(t, "restart", res[0].Task.OnRetry, "SubmitManyClaimed")
		require.Empty(t, res[1].Task.OnRetry, "SubmitManyClaimed")
		require.Equal(t, "restart", e.get(res[0].Task.ID).OnRetry, "SubmitManyClaimed, as stored")
	}
}

func testNotFound(t *testing.T, e *env) {
	const id = 424242
	_, err := e.s.Get(e.ctx, id)
	require.ErrorIs(t, err, tasks.ErrNotFound)
	_, err = e.s.Attempts(e.ctx, id)
	require.ErrorIs(t, err, tasks.ErrNotFound)
	_, err = e.s.Checkpoint(e.ctx, id)
	require.ErrorIs(t, err, tasks.ErrNotFound)
	_, err = e.s.Cancel(e.ctx, id)
	require.ErrorIs(t, err, tasks.ErrNotFound)
	_, err = e.s.Retry(e.ctx, id)
	require.ErrorIs(t, err, tasks.ErrNotFound)
	l := tasks.Lease{TaskID: id, Owner: "a", Token: 1}
	require.ErrorIs(t, e.s.SaveCheckpoint(e.ctx, l, []byte("x")), tasks.ErrNotFound)
	require.ErrorIs(t, e.s.Progress(e.ctx, l, 1, 2), tasks.ErrNotFound)
	require.ErrorIs(t, e.complete(tasks.Completion{Lease: l, State: tasks.StateSucceeded}), tasks.ErrNotFound)
	lost, cancel, err := e.s.Heartbeat(e.ctx, []tasks.Lease{l}, lease)
	require.NoError(t, err)
	require.Equal(t, []tasks.Lease{l}, lost)
	require.Empty(t, cancel)
}

func testIdempotency(t *testing.T, e *env) {
	spec := tasks.Spec{Module: e.module, IdempotencyKey: "order-17", Input: []byte("first")}
	first := e.submit(spec)
	spec.Input = []byte("second")
	again, existing, err := e.s.Submit(e.ctx, spec)
	require.NoError(t, err)
	require.True(t, existing)
	require.Equal(t, first, again)

	other := e.submit(tasks.Spec{Module: e.module, IdempotencyKey: "order-18"})
	require.NotEqual(t, first.ID, other.ID)
	// No key: never deduplicated.
	require.NotEqual(t, e.submit(e.spec()).ID, e.submit(e.spec()).ID)

	// The key holds whatever the first task's state.
	cl := e.claim("a", 1)
	require.Equal(t, []int64{first.ID}, ids(cl))
	require.NoError(t, e.complete(tasks.Completion{Lease: cl[0].Lease, State: tasks.StateSucceeded}))
	again, existing, err = e.s.Submit(e.ctx, spec)
	require.NoError(t, err)
	require.True(t, existing)
	require.Equal(t, first.ID, again.ID)
	require.Equal(t, tasks.StateSucceeded, again.State)
}

func testIdempotencyConcurrent(t *testing.T, e *env) {
	const n = 16
	type result struct {
		id       int64
		existing bool
		err      error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			task, existing, err := e.s.Submit(e.ctx, tasks.Spec{Module: e.module, IdempotencyKey: "same"})
			results[i] = result{task.ID, existing, err}
		})
	}
	wg.Wait()
	created := 0
	for _, r := range results {
		require.NoError(t, r.err)
		require.Equal(t, results[0].id, r.id)
		if !r.existing {
			created++
		}
	}
	require.Equal(t, 1, created, "exactly one submit created the task")
	list, err := e.s.List(e.ctx, tasks.ListFilter{})
	require.NoError(t, err)
	require.Len(t, list, 1)
}
