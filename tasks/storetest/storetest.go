package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// Run runs the conformance suite against the stores open returns, one
// fresh store per subtest; subtests run in parallel. open must return a
// fresh, empty store whose clock is now (it never sleeps: the suite moves
// the clock), and arrange for the store to be closed when t ends
// (t.Cleanup); it may call t.Fatal.
func Run(t *testing.T, open func(t *testing.T, now func() time.Time) tasks.Store) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"ModuleContentAddressing", testModules},
		{"SubmitUnknownModule", testSubmitUnknownModule},
		{"SubmitInvalidSpec", testSubmitInvalidSpec},
		{"SubmitCaps", testSubmitCaps},
		{"SubmitDefaultsAndRoundTrip", testSubmitRoundTrip},
		{"NotFound", testNotFound},
		{"ClaimOrder", testClaimOrder},
		{"ClaimRequestEdges", testClaimEdges},
		{"RunAtDelay", testRunAtDelay},
		{"QueueMaxima", testQueueMaxima},
		{"LeaseExpiryTakeover", testTakeover},
		{"LeaseExpiryDead", testTakeoverDead},
		{"Fencing", testFencing},
		{"Heartbeat", testHeartbeat},
		{"Checkpoint", testCheckpoint},
		{"Progress", testProgress},
		{"CompleteSucceeded", testCompleteSucceeded},
		{"CompleteRetryBackoff", testCompleteRetry},
		{"CompleteDeadAndCancelled", testCompleteDeadCancelled},
		{"CompleteInvalidState", testCompleteInvalidState},
		{"CompleteBatch", testCompleteBatch},
		{"DeadAfterMaxAttempts", testDeadAfterMaxAttempts},
		{"InterruptedKeepsCheckpoint", testInterrupted},
		{"Idempotency", testIdempotency},
		{"IdempotencyConcurrent", testIdempotencyConcurrent},
		{"Cancel", testCancel},
		{"Retry", testRetry},
		{"RecoverRunning", testRecoverRunning},
		{"Release", testRelease},
		{"ReleaseStale", testReleaseStale},
		{"List", testList},
		{"ListLeavesOutPayloads", testListPayloads},
		{"ClaimLeavesOutLargePayloads", testClaimInline},
		{"Prune", testPrune},
		{"Attempts", testAttempts},
		{"Summary", testSummary},
		{"ConcurrentPools", testConcurrentPools},
		{"SubmitMany", testSubmitMany},
		{"SubmitManyInvalid", testSubmitManyInvalid},
		{"SubmitManyLarge", testSubmitManyLarge},
		{"SubmitManyConcurrent", testSubmitManyConcurrent},
		{"SubmitManyFallback", testSubmitManyFallback},
		{"SubmitManyAfterPrune", testSubmitManyAfterPrune},
		{"SubmitManyClaimed", testSubmitManyClaimed},
		{"ListPaging", testListPaging},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := NewClock(Start)
			s := open(t, clock.Now)
			require.NotNil(t, s, "open returned a nil store")
			e := &env{t: t, s: s, clock: clock, ctx: t.Context()}
			e.module = e.putModule(wasmHeader)
			tc.fn(t, e)
		})
	}
}

// wasmHeader is the smallest valid module: magic and version.
var wasmHeader = []byte("\x00asm\x01\x00\x00\x00")

// lease is the lease length the suite's claims ask for.
const lease = 30 * time.Second

// env is one subtest's store and helpers.
type env struct {
	t      *testing.T
	s      tasks.Store
	clock  *Clock
	ctx    context.Context
	module string
}

func (e *env) putModule(b []byte) string {
	e.t.Helper()
	h, err := e.s.PutModule(e.ctx, b)
	require.NoError(e.t, err)
	return h
}

// spec is a valid spec on the env's module.
func (e *env) spec() tasks.Spec { return tasks.Spec{Module: e.module} }

func (e *env) submit(spec tasks.Spec) tasks.Task {
	e.t.Helper()
	task, existing, err := e.s.Submit(e.ctx, spec)
	require.NoError(e.t, err)
	require.False(e.t, existing)
	return task
}

func (e *env) submitN(n int, spec tasks.Spec) []tasks.Task {
	e.t.Helper()
	out := make([]tasks.Task, n)
	for i := range out {
		out[i] = e.submit(spec)
	}
	return out
}

func (e *env) get(id int64) tasks.Task {
	e.t.Helper()
	task, err := e.s.Get(e.ctx, id)
	require.NoError(e.t, err)
	return task
}

func (e *env) claim(owner string, max int) []tasks.Claimed {
	e.t.Helper()
	cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: owner, Max: max, Lease: lease})
	require.NoError(e.t, err)
	return cl
}

// claimOne claims exactly one task and checks it is want.
func (e *env) claimOne(owner string, want int64) tasks.Claimed {
	e.t.Helper()
	cl := e.claim(owner, 10)
	require.Len(e.t, cl, 1)
	require.Equal(e.t, want, cl[0].Task.ID)
	return cl[0]
}

// complete ends one attempt and returns its item error (the batch must not fail).
func (e *env) complete(c tasks.Completion) error {
	e.t.Helper()
	errs, err := e.s.Complete(e.ctx, []tasks.Completion{c})
	require.NoError(e.t, err)
	require.Len(e.t, errs, 1)
	return errs[0]
}

func (e *env) attempts(id int64) []tasks.Attempt {
	e.t.Helper()
	as, err := e.s.Attempts(e.ctx, id)
	require.NoError(e.t, err)
	return as
}

func ids(cl []tasks.Claimed) []int64 {
	out := make([]int64, len(cl))
	for i, c := range cl {
		out[i] = c.Task.ID
	}
	return out
}

func taskIDs(ts []tasks.Task) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

func requireTime(t *testing.T, want, got time.Time, what string) {
	t.Helper()
	require.True(t, want.Equal(got), "%s: want %v, got %v", what, want, got)
}

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
	requireTime(t, spec.RunAt, got.RunAt, "run at")
	listed, err := e.s.List(e.ctx, tasks.ListFilter{AfterID: task.ID - 1, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, spec.Labels, listed[0].Labels, "List returns the labels")
	require.Equal(t, "greet", listed[0].Export, "List returns the export")
	require.Empty(t, e.get(e.submit(e.spec()).ID).Export, "no export: _start")
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

func testClaimOrder(t *testing.T, e *env) {
	low1 := e.submit(e.spec())
	high1 := e.submit(tasks.Spec{Module: e.module, Priority: 5})
	low2 := e.submit(e.spec())
	high2 := e.submit(tasks.Spec{Module: e.module, Priority: 5})
	// Ready earlier (RunAt in the past) goes first among equal priorities.
	early := e.submit(tasks.Spec{Module: e.module, RunAt: Start.Add(-time.Hour)})
	neg := e.submit(tasks.Spec{Module: e.module, Priority: -1})

	cl := e.claim("pool-a", 2)
	require.Equal(t, []int64{high1.ID, high2.ID}, ids(cl))
	cl = append(cl, e.claim("pool-a", 10)...)
	require.Equal(t, []int64{high1.ID, high2.ID, early.ID, low1.ID, low2.ID, neg.ID}, ids(cl))
	require.Empty(t, e.claim("pool-a", 10), "nothing left")

	for _, c := range cl {
		require.Equal(t, tasks.StateRunning, c.Task.State)
		require.Equal(t, 1, c.Task.Attempt)
		require.Equal(t, tasks.Lease{TaskID: c.Task.ID, Owner: "pool-a", Token: 1}, c.Lease)
		require.Equal(t, "pool-a", c.Task.LeaseOwner)
		requireTime(t, Start.Add(lease), c.Task.LeaseExpiry, "lease expiry")
		require.Nil(t, c.Checkpoint)
		require.Equal(t, e.module, c.Task.Module)
		got := e.get(c.Task.ID)
		require.Equal(t, tasks.StateRunning, got.State)
		require.Equal(t, 1, got.Attempt)
		require.Equal(t, "pool-a", got.LeaseOwner)
	}
}

func testClaimEdges(t *testing.T, e *env) {
	e.submit(e.spec())
	cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "a", Max: 0, Lease: lease})
	require.NoError(t, err)
	require.Empty(t, cl, "Max 0 claims nothing")
	cl, err = e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "a", Max: 5, Lease: lease, Queues: map[string]int{}})
	require.NoError(t, err)
	require.Empty(t, cl, "an empty (non-nil) queue map claims nothing")
	cl, err = e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "a", Max: 5, Lease: lease, Queues: map[string]int{tasks.DefaultQueue: 0}})
	require.NoError(t, err)
	require.Empty(t, cl, "a queue with maximum 0 claims nothing")
	_, err = e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "", Max: 5, Lease: lease})
	require.Error(t, err, "an owner is required")
	_, err = e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "a", Max: 5})
	require.Error(t, err, "a lease is required")
	require.Len(t, e.claim("a", 5), 1)
}

func testRunAtDelay(t *testing.T, e *env) {
	later := e.submit(tasks.Spec{Module: e.module, RunAt: Start.Add(time.Minute), Priority: 10})
	now := e.submit(e.spec())
	cl := e.claimOne("a", now.ID)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded}))
	require.Empty(t, e.claim("a", 10), "not ready before RunAt")
	e.clock.Advance(time.Minute - time.Microsecond)
	require.Empty(t, e.claim("a", 10), "not ready before RunAt")
	e.clock.Advance(time.Microsecond)
	e.claimOne("a", later.ID)
}

func testQueueMaxima(t *testing.T, e *env) {
	spec := func(q string) tasks.Spec { return tasks.Spec{Module: e.module, Queue: q} }
	a := e.submitN(4, spec("a"))
	b := e.submitN(4, spec("b"))
	c := e.submitN(4, spec("c"))
	claim := func(max int, queues map[string]int) []tasks.Claimed {
		t.Helper()
		cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "p", Max: max, Lease: lease, Queues: queues})
		require.NoError(t, err)
		return cl
	}
	cl := claim(10, map[string]int{"a": 2, "b": 1})
	require.ElementsMatch(t, []int64{a[0].ID, a[1].ID, b[0].ID}, ids(cl))
	// The overall maximum caps the sum, in claim order across queues.
	cl = claim(2, map[string]int{"a": 10, "b": 10, "c": 10})
	require.Equal(t, []int64{a[2].ID, a[3].ID}, ids(cl))
	cl = claim(10, map[string]int{"b": 1, "nope": 5})
	require.Equal(t, []int64{b[1].ID}, ids(cl))
	cl = claim(10, nil)
	require.Equal(t, []int64{b[2].ID, b[3].ID, c[0].ID, c[1].ID, c[2].ID, c[3].ID}, ids(cl))
}

func testTakeover(t *testing.T, e *env) {
	task := e.submit(e.spec())
	old := e.claimOne("pool-a", task.ID)
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, old.Lease, []byte("cp-a")))

	e.clock.Advance(lease)
	require.Empty(t, e.claim("pool-b", 10), "a lease holds until its expiry")
	e.clock.Advance(time.Second)
	now := e.clock.Now()
	cl := e.claimOne("pool-b", task.ID)
	require.Equal(t, 2, cl.Task.Attempt)
	require.Equal(t, tasks.Lease{TaskID: task.ID, Owner: "pool-b", Token: 2}, cl.Lease)
	require.Equal(t, 1, cl.Task.Failures, "the lost attempt is counted")
	require.Equal(t, []byte("cp-a"), cl.Checkpoint, "the new attempt starts from the old one's checkpoint")
	requireTime(t, now.Add(lease), cl.Task.LeaseExpiry, "new lease expiry")

	as := e.attempts(task.ID)
	require.Len(t, as, 1)
	require.Equal(t, task.ID, as[0].TaskID)
	require.Equal(t, 1, as[0].Number)
	require.Equal(t, "pool-a", as[0].Owner)
	require.Equal(t, "lost", as[0].Outcome)
	require.True(t, as[0].Counted)
	requireTime(t, Start, as[0].StartedAt, "lost attempt start")
	require.False(t, as[0].EndedAt.IsZero())

	// Every write of the old attempt is refused.
	require.ErrorIs(t, e.complete(tasks.Completion{Lease: old.Lease, State: tasks.StateSucceeded, Result: []byte("late")}), tasks.ErrStaleLease)
	require.ErrorIs(t, e.s.SaveCheckpoint(e.ctx, old.Lease, []byte("late")), tasks.ErrStaleLease)
	require.ErrorIs(t, e.s.Progress(e.ctx, old.Lease, 1, 1), tasks.ErrStaleLease)
	lost, _, err := e.s.Heartbeat(e.ctx, []tasks.Lease{old.Lease}, lease)
	require.NoError(t, err)
	require.Equal(t, []tasks.Lease{old.Lease}, lost)
	cp, err := e.s.Checkpoint(e.ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("cp-a"), cp)

	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded, Result: []byte("ok"),
		Attempt: tasks.Attempt{Outcome: "succeeded"}}))
	got := e.get(task.ID)
	require.Equal(t, tasks.StateSucceeded, got.State)
	require.Equal(t, []byte("ok"), got.Result)
	require.Len(t, e.attempts(task.ID), 2)
}

func testTakeoverDead(t *testing.T, e *env) {
	task := e.submit(tasks.Spec{Module: e.module, MaxAttempts: 1})
	e.claimOne("pool-a", task.ID)
	e.clock.Advance(lease + time.Second)
	require.Empty(t, e.claim("pool-b", 10), "no attempts left: dead, not claimed")
	got := e.get(task.ID)
	require.Equal(t, tasks.StateDead, got.State)
	require.Equal(t, 1, got.Failures)
	require.Empty(t, got.LeaseOwner)
	require.False(t, got.FinishedAt.IsZero())
	require.NotEmpty(t, got.LastError)
	as := e.attempts(task.ID)
	require.Len(t, as, 1)
	require.Equal(t, "lost", as[0].Outcome)
	require.True(t, as[0].Counted)
}

func testFencing(t *testing.T, e *env) {
	task := e.submit(e.spec())
	cl := e.claimOne("pool-a", task.ID)
	good := cl.Lease
	for name, bad := range map[string]tasks.Lease{
		"old token":    {TaskID: good.TaskID, Owner: good.Owner, Token: good.Token - 1},
		"future token": {TaskID: good.TaskID, Owner: good.Owner, Token: good.Token + 1},
		"other owner":  {TaskID: good.TaskID, Owner: "pool-b", Token: good.Token},
	} {
		require.ErrorIs(t, e.s.SaveCheckpoint(e.ctx, bad, []byte("x")), tasks.ErrStaleLease, name)
		require.ErrorIs(t, e.s.Progress(e.ctx, bad, 1, 2), tasks.ErrStaleLease, name)
		require.ErrorIs(t, e.complete(tasks.Completion{Lease: bad, State: tasks.StateSucceeded}), tasks.ErrStaleLease, name)
		lost, cancel, err := e.s.Heartbeat(e.ctx, []tasks.Lease{bad}, lease)
		require.NoError(t, err)
		require.Equal(t, []tasks.Lease{bad}, lost, name)
		require.Empty(t, cancel)
	}
	got := e.get(task.ID)
	require.Equal(t, tasks.StateRunning, got.State, "stale writes changed nothing")
	require.Equal(t, -1, got.CheckpointSize)
	require.Zero(t, got.ProgressDone)

	require.NoError(t, e.s.SaveCheckpoint(e.ctx, good, []byte("x")))
	require.NoError(t, e.s.Progress(e.ctx, good, 1, 2))
	require.NoError(t, e.complete(tasks.Completion{Lease: good, State: tasks.StateSucceeded}))
	// Once ended, the lease holds nothing.
	require.ErrorIs(t, e.complete(tasks.Completion{Lease: good, State: tasks.StateSucceeded}), tasks.ErrStaleLease)
	require.ErrorIs(t, e.s.SaveCheckpoint(e.ctx, good, []byte("y")), tasks.ErrStaleLease)
	require.ErrorIs(t, e.s.Progress(e.ctx, good, 2, 2), tasks.ErrStaleLease)
	require.Len(t, e.attempts(task.ID), 1)
}

func testHeartbeat(t *testing.T, e *env) {
	e.submitN(3, e.spec())
	cl := e.claim("pool-a", 3)
	require.Len(t, cl, 3)
	leases := []tasks.Lease{cl[0].Lease, cl[1].Lease, cl[2].Lease}

	e.clock.Advance(lease - time.Second)
	lost, cancel, err := e.s.Heartbeat(e.ctx, leases, time.Minute)
	require.NoError(t, err)
	require.Empty(t, lost)
	require.Empty(t, cancel)
	requireTime(t, e.clock.Now().Add(time.Minute), e.get(cl[0].Task.ID).LeaseExpiry, "extended lease")

	// Past the original expiry, the extended leases still hold.
	e.clock.Advance(lease)
	require.Empty(t, e.claim("pool-b", 10))

	// Cancellation requested: reported, and the lease is still extended.
	_, err = e.s.Cancel(e.ctx, cl[1].Task.ID)
	require.NoError(t, err)
	// A finished attempt: lost.
	require.NoError(t, e.complete(tasks.Completion{Lease: cl[2].Lease, State: tasks.StateSucceeded}))
	lost, cancel, err = e.s.Heartbeat(e.ctx, leases, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []tasks.Lease{cl[2].Lease}, lost)
	require.Equal(t, []tasks.Lease{cl[1].Lease}, cancel)
	requireTime(t, e.clock.Now().Add(time.Minute), e.get(cl[1].Task.ID).LeaseExpiry, "lease of a cancelling task")

	// An expired lease that nobody took over is still held, and renewed.
	e.clock.Advance(2 * time.Minute)
	lost, cancel, err = e.s.Heartbeat(e.ctx, leases[:2], time.Minute)
	require.NoError(t, err)
	require.Empty(t, lost)
	require.Equal(t, []tasks.Lease{cl[1].Lease}, cancel)
	require.Empty(t, e.claim("pool-b", 10))

	// Taken over: lost.
	e.clock.Advance(2 * time.Minute)
	require.Len(t, e.claim("pool-b", 10), 1, "the cancelling task is cancelled on takeover, not claimed")
	lost, _, err = e.s.Heartbeat(e.ctx, leases[:2], time.Minute)
	require.NoError(t, err)
	require.Equal(t, leases[:2], lost)
	require.Equal(t, tasks.StateCancelled, e.get(cl[1].Task.ID).State)

	lost, cancel, err = e.s.Heartbeat(e.ctx, nil, time.Minute)
	require.NoError(t, err)
	require.Empty(t, lost)
	require.Empty(t, cancel)
}

func testCheckpoint(t *testing.T, e *env) {
	task := e.submit(e.spec())
	cp, err := e.s.Checkpoint(e.ctx, task.ID)
	require.NoError(t, err)
	require.Nil(t, cp, "no checkpoint yet")

	cl := e.claimOne("a", task.ID)
	require.Nil(t, cl.Checkpoint)
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, []byte("first")))
	blob := make([]byte, 100<<10)
	for i := range blob {
		blob[i] = byte(i * 7)
	}
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, blob))
	cp, err = e.s.Checkpoint(e.ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, blob, cp, "the last save wins")
	require.Equal(t, len(blob), e.get(task.ID).CheckpointSize)

	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued,
		Attempt: tasks.Attempt{Outcome: "interrupted", ExitCode: 75}}))
	cl = e.claimOne("b", task.ID)
	require.Nil(t, cl.Checkpoint, "over tasks.ClaimInline: left out of the next claim")
	require.Equal(t, len(blob), cl.Task.CheckpointSize)
	cp, err = e.s.Checkpoint(e.ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, blob, cp, "read when the attempt starts")
	require.Equal(t, len(blob), cl.Task.CheckpointSize)

	// An empty checkpoint is a checkpoint.
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, []byte{}))
	cp, err = e.s.Checkpoint(e.ctx, task.ID)
	require.NoError(t, err)
	require.NotNil(t, cp)
	require.Empty(t, cp)
	require.Equal(t, 0, e.get(task.ID).CheckpointSize)

	// Kept after success.
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, []byte("final")))
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded}))
	cp, err = e.s.Checkpoint(e.ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("final"), cp)
	as := e.attempts(task.ID)
	require.Len(t, as, 2)
	require.False(t, as[0].Resumed)
	require.True(t, as[1].Resumed, "the second attempt was handed a checkpoint")
}

func testProgress(t *testing.T, e *env) {
	task := e.submit(e.spec())
	cl := e.claimOne("a", task.ID)
	require.NoError(t, e.s.Progress(e.ctx, cl.Lease, 3, 10))
	got := e.get(task.ID)
	require.Equal(t, int64(3), got.ProgressDone)
	require.Equal(t, int64(10), got.ProgressTotal)
	require.NoError(t, e.s.Progress(e.ctx, cl.Lease, 10, 10))
	require.Equal(t, int64(10), e.get(task.ID).ProgressDone)
}

func testCompleteSucceeded(t *testing.T, e *env) {
	task := e.submit(e.spec())
	cl := e.claimOne("a", task.ID)
	e.clock.Advance(2 * time.Second)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded, Result: []byte("out"),
		Attempt: tasks.Attempt{Outcome: "succeeded", ExitCode: 0}}))
	got := e.get(task.ID)
	require.Equal(t, tasks.StateSucceeded, got.State)
	require.Equal(t, []byte("out"), got.Result)
	require.Empty(t, got.LeaseOwner)
	require.True(t, got.LeaseExpiry.IsZero())
	requireTime(t, e.clock.Now(), got.FinishedAt, "finished at")
	require.Zero(t, got.Failures)
	as := e.attempts(task.ID)
	require.Equal(t, []tasks.Attempt{{TaskID: task.ID, Number: 1, Owner: "a", StartedAt: Start, EndedAt: e.clock.Now(),
		Outcome: "succeeded"}}, normalize(as))
	require.Equal(t, 2*time.Second, as[0].Duration())
	require.Empty(t, e.claim("a", 10))

	// The tail of the attempt's stderr is kept with it.
	task = e.submit(e.spec())
	cl = e.claimOne("a", task.ID)
	tail := "line 1\nerror: ünïcode ✓\n"
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateDead,
		Attempt: tasks.Attempt{Outcome: "failed", ExitCode: 1, Counted: true, Stderr: tail, Work: 1<<40 + 7}}))
	as = e.attempts(task.ID)
	require.Equal(t, tail, as[0].Stderr)
	require.Equal(t, int64(1<<40+7), as[0].Work, "the attempt's work units are kept with it")

	// Caller-given attempt times are kept.
	task = e.submit(e.spec())
	cl = e.claimOne("a", task.ID)
	started, ended := Start.Add(time.Minute), Start.Add(2*time.Minute)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded,
		Attempt: tasks.Attempt{Outcome: "succeeded", StartedAt: started, EndedAt: ended}}))
	as = e.attempts(task.ID)
	requireTime(t, started, as[0].StartedAt, "given start")
	requireTime(t, ended, as[0].EndedAt, "given end")
	require.Nil(t, e.get(task.ID).Result, "empty stdout")
}

// testClaimInline: Claim returns inputs and checkpoints of up to
// tasks.ClaimInline bytes with their task and leaves larger ones out
// (Claimed.PayloadLeftOut), which Get and Checkpoint then return whole.
func testClaimInline(t *testing.T, e *env) {
	small, edge, large := []byte("in"), bytes.Repeat([]byte("e"), tasks.ClaimInline), bytes.Repeat([]byte("L"), tasks.ClaimInline+1)
	for _, c := range []struct {
		name string
		in   []byte
	}{{"small", small}, {"edge", edge}, {"none", nil}} {
		spec := e.spec()
		spec.Input = c.in
		cl := e.claimOne("a", e.submit(spec).ID)
		require.Equal(t, c.in, cl.Task.Input, c.name)
		require.Equal(t, len(c.in), cl.Task.InputSize, c.name)
		in, cp := cl.PayloadLeftOut()
		require.False(t, in, c.name)
		require.False(t, cp, c.name)
	}
	spec := e.spec()
	spec.Input = large
	id := e.submit(spec).ID
	cl := e.claimOne("a", id)
	require.Nil(t, cl.Task.Input)
	require.Equal(t, len(large), cl.Task.InputSize)
	in, _ := cl.PayloadLeftOut()
	require.True(t, in)
	require.True(t, bytes.Equal(large, e.get(id).Input), "Get returns it whole")

	// Checkpoints: one at the edge comes back with the claim, a larger one
	// is left out; an empty one is not nil.
	for _, c := range []struct {
		blob     []byte
		leftOut  bool
		describe string
	}{{[]byte{}, false, "empty"}, {edge, false, "edge"}, {large, true, "large"}} {
		task := e.submit(e.spec())
		cl := e.claimOne("a", task.ID)
		require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, c.blob))
		require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued,
			Attempt: tasks.Attempt{Outcome: "interrupted"}}))
		cl = e.claimOne("b", task.ID)
		require.Equal(t, len(c.blob), cl.Task.CheckpointSize, c.describe)
		_, cp := cl.PayloadLeftOut()
		require.Equal(t, c.leftOut, cp, c.describe)
		if c.leftOut {
			require.Nil(t, cl.Checkpoint, c.describe)
			got, err := e.s.Checkpoint(e.ctx, task.ID)
			require.NoError(t, err)
			require.True(t, bytes.Equal(c.blob, got), c.describe)
		} else {
			require.NotNil(t, cl.Checkpoint, c.describe)
			require.True(t, bytes.Equal(c.blob, cl.Checkpoint), c.describe)
		}
	}
}

// testListPayloads: List leaves out inputs and results but gives their
// sizes; Get, Submit, Cancel and Retry return the input whole, Claim up
// to tasks.ClaimInline bytes (testClaimInline).
func testListPayloads(t *testing.T, e *env) {
	input, result := bytes.Repeat([]byte("in"), 50_000), bytes.Repeat([]byte("out"), 70_000)
	spec := e.spec()
	spec.Input = input
	done := e.submit(spec)
	require.Equal(t, input, done.Input)
	require.Equal(t, len(input), done.InputSize)
	cl := e.claimOne("a", done.ID)
	require.Nil(t, cl.Task.Input, "an input over tasks.ClaimInline is left out of the claim")
	require.Equal(t, len(input), cl.Task.InputSize)
	require.Zero(t, cl.Task.ResultSize)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded, Result: result,
		Attempt: tasks.Attempt{Outcome: "succeeded"}}))
	spec.Input = []byte("small")
	queued := e.submit(spec)
	empty := e.submit(e.spec())
	require.Nil(t, empty.Input)
	require.Zero(t, empty.InputSize)

	got := e.get(done.ID)
	require.Equal(t, input, got.Input)
	require.Equal(t, result, got.Result)
	require.Equal(t, len(input), got.InputSize)
	require.Equal(t, len(result), got.ResultSize)
	list, err := e.s.List(e.ctx, tasks.ListFilter{})
	require.NoError(t, err)
	require.Len(t, list, 3)
	for i, want := range []struct{ in, out int }{{len(input), len(result)}, {5, 0}, {0, 0}} {
		require.Nil(t, list[i].Input, "task %d", list[i].ID)
		require.Nil(t, list[i].Result, "task %d", list[i].ID)
		require.Equal(t, want.in, list[i].InputSize, "task %d", list[i].ID)
		require.Equal(t, want.out, list[i].ResultSize, "task %d", list[i].ID)
	}
	cancelled, err := e.s.Cancel(e.ctx, queued.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("small"), cancelled.Input)
	retried, err := e.s.Retry(e.ctx, queued.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("small"), retried.Input)
	require.Equal(t, 5, retried.InputSize)

	// An idempotent submit returns the first task, input included.
	spec = e.spec()
	spec.Input, spec.IdempotencyKey = input, "payload"
	first := e.submit(spec)
	spec.Input = []byte("other")
	again, existing, err := e.s.Submit(e.ctx, spec)
	require.NoError(t, err)
	require.True(t, existing)
	require.Equal(t, first.ID, again.ID)
	require.Equal(t, input, again.Input)
}

// testPrune: Prune (for a store that implements tasks.Pruner) deletes
// the tasks that ended before its time, with everything stored for them,
// and nothing else.
func testPrune(t *testing.T, e *env) {
	p, ok := e.s.(tasks.Pruner)
	if !ok {
		t.Skip("the store does not implement tasks.Pruner")
	}
	finish := func(id int64, state tasks.State, result string) {
		t.Helper()
		cl := e.claimOne("a", id)
		require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, []byte("cp")))
		require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: state, Result: []byte(result),
			Attempt: tasks.Attempt{Outcome: string(state)}}))
	}
	spec := e.spec()
	spec.Input, spec.IdempotencyKey = []byte("input"), "old-succeeded"
	oldOK := e.submit(spec)
	finish(oldOK.ID, tasks.StateSucceeded, "out")
	oldDead := e.submit(e.spec())
	finish(oldDead.ID, tasks.StateDead, "")
	oldCancelled := e.submit(e.spec())
	_, err := e.s.Cancel(e.ctx, oldCancelled.ID)
	require.NoError(t, err)
	running := e.submit(e.spec())
	runningLease := e.claimOne("a", running.ID).Lease
	_, _, err = e.s.Heartbeat(e.ctx, []tasks.Lease{runningLease}, 24*time.Hour)
	require.NoError(t, err)
	later := e.spec()
	later.RunAt = Start.Add(24 * time.Hour) // stays queued
	queued := e.submit(later)

	e.clock.Advance(time.Hour)
	cutoff := e.clock.Now()
	e.clock.Advance(time.Hour)
	recent := e.submit(e.spec())
	finish(recent.ID, tasks.StateSucceeded, "new")

	n, err := p.Prune(e.ctx, cutoff)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	for _, id := range []int64{oldOK.ID, oldDead.ID, oldCancelled.ID} {
		_, err := e.s.Get(e.ctx, id)
		require.ErrorIs(t, err, tasks.ErrNotFound, "task %d", id)
	}
	list, err := e.s.List(e.ctx, tasks.ListFilter{})
	require.NoError(t, err)
	require.Equal(t, []int64{running.ID, queued.ID, recent.ID}, []int64{list[0].ID, list[1].ID, list[2].ID})
	require.Len(t, list, 3)
	require.Equal(t, []byte("new"), e.get(recent.ID).Result)
	cp, err := e.s.Checkpoint(e.ctx, recent.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("cp"), cp)
	require.Len(t, e.attempts(recent.ID), 1)
	// The running task still completes; the module stays.
	require.NoError(t, e.complete(tasks.Completion{Lease: runningLease, State: tasks.StateSucceeded,
		Attempt: tasks.Attempt{Outcome: "succeeded"}}))
	_, err = e.s.Module(e.ctx, e.module)
	require.NoError(t, err)

	// Nothing more to delete; the pruned task's idempotency key is free.
	n, err = p.Prune(e.ctx, cutoff)
	require.NoError(t, err)
	require.Zero(t, n)
	again := e.submit(spec)
	require.NotEqual(t, oldOK.ID, again.ID)

	// A done context deletes nothing.
	done, cancel := context.WithCancel(e.ctx)
	cancel()
	n, err = p.Prune(done, e.clock.Now().Add(time.Hour))
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, n)
}

// normalize puts the times of as in UTC so that attempts compare with Equal.
func normalize(as []tasks.Attempt) []tasks.Attempt {
	out := make([]tasks.Attempt, len(as))
	for i, a := range as {
		a.StartedAt, a.EndedAt = a.StartedAt.UTC(), a.EndedAt.UTC()
		out[i] = a
	}
	return out
}

func testCompleteRetry(t *testing.T, e *env) {
	task := e.submit(e.spec())
	cl := e.claimOne("a", task.ID)
	backoff := Start.Add(time.Minute)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued, RunAt: backoff,
		Attempt: tasks.Attempt{Outcome: "failed", ExitCode: 3, Reason: "exit code 3", Counted: true}}))
	got := e.get(task.ID)
	require.Equal(t, tasks.StateQueued, got.State)
	require.Equal(t, 1, got.Failures)
	require.Equal(t, "exit code 3", got.LastError)
	requireTime(t, backoff, got.RunAt, "backoff")
	require.True(t, got.FinishedAt.IsZero())
	require.Empty(t, got.LeaseOwner)
	require.Nil(t, got.Result)

	require.Empty(t, e.claim("a", 10), "not claimable before the backoff")
	e.clock.Set(backoff)
	cl = e.claimOne("a", task.ID)
	require.Equal(t, 2, cl.Lease.Token)
	as := e.attempts(task.ID)
	require.Len(t, as, 1)
	require.Equal(t, "failed", as[0].Outcome)
	require.Equal(t, 3, as[0].ExitCode)
	require.Equal(t, "exit code 3", as[0].Reason)
	require.True(t, as[0].Counted)

	// Zero RunAt: ready at once.
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued,
		Attempt: tasks.Attempt{Outcome: "trap", Reason: "unreachable", Counted: true}}))
	cl = e.claimOne("a", task.ID)
	require.Equal(t, 2, cl.Task.Failures)
}

func testCompleteDeadCancelled(t *testing.T, e *env) {
	dead := e.submit(e.spec())
	cl := e.claimOne("a", dead.ID)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateDead,
		Attempt: tasks.Attempt{Outcome: "failed", ExitCode: 1, Reason: "bad input", Counted: true}}))
	got := e.get(dead.ID)
	require.Equal(t, tasks.StateDead, got.State)
	require.Equal(t, "bad input", got.LastError)
	require.Equal(t, 1, got.Failures)
	requireTime(t, Start, got.FinishedAt, "finished at")

	cancelled := e.submit(e.spec())
	cl = e.claimOne("a", cancelled.ID)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateCancelled,
		Attempt: tasks.Attempt{Outcome: "cancelled", Reason: "cancelled by user"}}))
	got = e.get(cancelled.ID)
	require.Equal(t, tasks.StateCancelled, got.State)
	require.Zero(t, got.Failures)
	requireTime(t, Start, got.FinishedAt, "finished at")
	require.Empty(t, e.claim("a", 10))
}

func testCompleteInvalidState(t *testing.T, e *env) {
	task := e.submit(e.spec())
	cl := e.claimOne("a", task.ID)
	for _, st := range []tasks.State{tasks.StateRunning, "", "bogus"} {
		require.ErrorIs(t, e.complete(tasks.Completion{Lease: cl.Lease, State: st}), tasks.ErrInvalidState, string(st))
	}
	require.Equal(t, tasks.StateRunning, e.get(task.ID).State)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded}))
}

func testCompleteBatch(t *testing.T, e *env) {
	e.submitN(4, e.spec())
	cl := e.claim("a", 4)
	require.Len(t, cl, 4)
	stale := cl[2].Lease
	stale.Token++
	errs, err := e.s.Complete(e.ctx, []tasks.Completion{
		{Lease: cl[0].Lease, State: tasks.StateSucceeded},
		{Lease: cl[1].Lease, State: tasks.StateQueued, Attempt: tasks.Attempt{Counted: true, Reason: "r"}},
		{Lease: stale, State: tasks.StateSucceeded},
		{Lease: cl[3].Lease, State: tasks.StateDead},
		{Lease: cl[0].Lease, State: tasks.StateSucceeded}, // the same attempt twice
	})
	require.NoError(t, err)
	require.Len(t, errs, 5)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.ErrorIs(t, errs[2], tasks.ErrStaleLease)
	require.NoError(t, errs[3])
	require.ErrorIs(t, errs[4], tasks.ErrStaleLease)
	require.Equal(t, tasks.StateSucceeded, e.get(cl[0].Task.ID).State)
	require.Equal(t, tasks.StateQueued, e.get(cl[1].Task.ID).State)
	require.Equal(t, tasks.StateRunning, e.get(cl[2].Task.ID).State)
	require.Equal(t, tasks.StateDead, e.get(cl[3].Task.ID).State)
	require.Len(t, e.attempts(cl[0].Task.ID), 1)

	errs, err = e.s.Complete(e.ctx, nil)
	require.NoError(t, err)
	require.Empty(t, errs)
}

func testDeadAfterMaxAttempts(t *testing.T, e *env) {
	task := e.submit(tasks.Spec{Module: e.module, MaxAttempts: 2})
	fail := func(c tasks.Claimed) {
		t.Helper()
		// The store, not only the caller, enforces MaxAttempts.
		require.NoError(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateQueued,
			Attempt: tasks.Attempt{Outcome: "failed", ExitCode: 1, Reason: "boom", Counted: true}}))
	}
	fail(e.claimOne("a", task.ID))
	require.Equal(t, tasks.StateQueued, e.get(task.ID).State)
	fail(e.claimOne("a", task.ID))
	got := e.get(task.ID)
	require.Equal(t, tasks.StateDead, got.State)
	require.Equal(t, 2, got.Failures)
	require.Equal(t, "boom", got.LastError)
	require.False(t, got.FinishedAt.IsZero())
	require.Empty(t, e.claim("a", 10))
	require.Len(t, e.attempts(task.ID), 2)
}

func testInterrupted(t *testing.T, e *env) {
	task := e.submit(tasks.Spec{Module: e.module, MaxAttempts: 1})
	for i := 1; i <= 3; i++ {
		cl := e.claimOne("a", task.ID)
		require.Equal(t, i, cl.Lease.Token)
		if i > 1 {
			require.Equal(t, []byte(fmt.Sprint("step ", i-1)), cl.Checkpoint)
		}
		require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, []byte(fmt.Sprint("step ", i))))
		require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued,
			Attempt: tasks.Attempt{Outcome: "interrupted", ExitCode: 75, Reason: "shutdown"}}))
		got := e.get(task.ID)
		require.Equal(t, tasks.StateQueued, got.State, "interrupted attempts are not counted")
		require.Zero(t, got.Failures)
	}
	cp, err := e.s.Checkpoint(e.ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("step 3"), cp)
	as := e.attempts(task.ID)
	require.Len(t, as, 3)
	for _, a := range as {
		require.Equal(t, "interrupted", a.Outcome)
		require.False(t, a.Counted)
	}
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

func testCancel(t *testing.T, e *env) {
	// Queued: cancelled at once.
	queued := e.submit(e.spec())
	got, err := e.s.Cancel(e.ctx, queued.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateCancelled, got.State)
	requireTime(t, Start, got.FinishedAt, "finished at")
	require.Equal(t, got, e.get(queued.ID))
	require.Empty(t, e.claim("a", 10), "a cancelled task is not claimed")
	_, err = e.s.Cancel(e.ctx, queued.ID)
	require.ErrorIs(t, err, tasks.ErrInvalidState, "already cancelled")

	// Running: requested; the worker ends it.
	running := e.submit(e.spec())
	cl := e.claimOne("a", running.ID)
	got, err = e.s.Cancel(e.ctx, running.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateRunning, got.State)
	require.True(t, got.CancelRequested)
	_, err = e.s.Cancel(e.ctx, running.ID)
	require.NoError(t, err, "asking twice is fine")
	_, cancel, err := e.s.Heartbeat(e.ctx, []tasks.Lease{cl.Lease}, lease)
	require.NoError(t, err)
	require.Equal(t, []tasks.Lease{cl.Lease}, cancel)
	// A requeue of a task whose cancellation was requested cancels it.
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued,
		Attempt: tasks.Attempt{Outcome: "interrupted", ExitCode: 75}}))
	got = e.get(running.ID)
	require.Equal(t, tasks.StateCancelled, got.State)
	require.False(t, got.FinishedAt.IsZero())

	// Terminal.
	done := e.submit(e.spec())
	cl = e.claimOne("a", done.ID)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded}))
	_, err = e.s.Cancel(e.ctx, done.ID)
	require.ErrorIs(t, err, tasks.ErrInvalidState)
	require.Equal(t, tasks.StateSucceeded, e.get(done.ID).State)
}

func testRetry(t *testing.T, e *env) {
	dead := e.submit(tasks.Spec{Module: e.module, MaxAttempts: 1})
	cl := e.claimOne("a", dead.ID)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued,
		Attempt: tasks.Attempt{Outcome: "failed", Counted: true, Reason: "boom"}}))
	require.Equal(t, tasks.StateDead, e.get(dead.ID).State)

	e.clock.Advance(time.Hour)
	got, err := e.s.Retry(e.ctx, dead.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, got.State)
	require.Zero(t, got.Failures)
	require.True(t, got.FinishedAt.IsZero())
	requireTime(t, e.clock.Now(), got.RunAt, "ready now")
	cl = e.claimOne("a", dead.ID)
	require.Equal(t, 2, cl.Lease.Token, "attempt numbers keep growing")

	// Running: not allowed.
	_, err = e.s.Retry(e.ctx, dead.ID)
	require.ErrorIs(t, err, tasks.ErrInvalidState)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded}))
	// Succeeded: not allowed.
	_, err = e.s.Retry(e.ctx, dead.ID)
	require.ErrorIs(t, err, tasks.ErrInvalidState)

	// Queued: not allowed.
	queued := e.submit(e.spec())
	_, err = e.s.Retry(e.ctx, queued.ID)
	require.ErrorIs(t, err, tasks.ErrInvalidState)

	// Cancelled (also a cancel requested while running).
	_, err = e.s.Cancel(e.ctx, queued.ID)
	require.NoError(t, err)
	got, err = e.s.Retry(e.ctx, queued.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, got.State)
	require.False(t, got.CancelRequested)
	cl = e.claimOne("a", queued.ID)
	_, err = e.s.Cancel(e.ctx, queued.ID)
	require.NoError(t, err)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateCancelled}))
	got, err = e.s.Retry(e.ctx, queued.ID)
	require.NoError(t, err)
	require.False(t, got.CancelRequested, "retry clears the cancellation request")
	cl = e.claimOne("a", queued.ID)
	_, cancel, err := e.s.Heartbeat(e.ctx, []tasks.Lease{cl.Lease}, lease)
	require.NoError(t, err)
	require.Empty(t, cancel)
}

func testRecoverRunning(t *testing.T, e *env) {
	rr, ok := e.s.(tasks.RunningRecoverer)
	if !ok {
		t.Skip("the store does not implement tasks.RunningRecoverer")
	}
	n, err := rr.RecoverRunning(e.ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	all := e.submitN(4, tasks.Spec{Module: e.module, MaxAttempts: 1})
	cl := e.claim("dead-runner", 3)
	require.Len(t, cl, 3)
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl[0].Lease, []byte("cp")))
	_, err = e.s.Cancel(e.ctx, cl[2].Task.ID)
	require.NoError(t, err)

	e.clock.Advance(time.Second)
	n, err = rr.RecoverRunning(e.ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n)

	for i, c := range cl {
		got := e.get(c.Task.ID)
		require.Zero(t, got.Failures, "a recovered attempt is not counted")
		require.Empty(t, got.LeaseOwner)
		require.True(t, got.LeaseExpiry.IsZero())
		as := e.attempts(c.Task.ID)
		require.Len(t, as, 1)
		require.Equal(t, "lost", as[0].Outcome)
		require.False(t, as[0].Counted)
		require.Equal(t, "dead-runner", as[0].Owner)
		if i == 2 {
			require.Equal(t, tasks.StateCancelled, got.State, "its cancellation was requested")
			continue
		}
		require.Equal(t, tasks.StateQueued, got.State)
		requireTime(t, e.clock.Now(), got.RunAt, "ready at once")
		require.ErrorIs(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded}), tasks.ErrStaleLease)
	}
	// Claimable at once, no lease timeout, no attempt charged (MaxAttempts 1).
	again := e.claim("new-runner", 10)
	require.ElementsMatch(t, []int64{cl[0].Task.ID, cl[1].Task.ID, all[3].ID}, ids(again))
	for _, c := range again {
		if c.Task.ID == cl[0].Task.ID {
			require.Equal(t, []byte("cp"), c.Checkpoint)
			require.Equal(t, 2, c.Lease.Token)
		}
	}
	n, err = rr.RecoverRunning(e.ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n)
}

func testRelease(t *testing.T, e *env) {
	require.NoError(t, e.s.Release(e.ctx, nil))

	// A task that has run and failed once before (with a checkpoint and a
	// backoff), and a fresh one (MaxAttempts 1: a release charges nothing).
	retried := e.submit(e.spec())
	first := e.claimOne("pool-a", retried.ID)
	require.NoError(t, e.s.SaveCheckpoint(e.ctx, first.Lease, []byte("cp")))
	require.NoError(t, e.complete(tasks.Completion{Lease: first.Lease, State: tasks.StateQueued, RunAt: Start.Add(time.Minute),
		Attempt: tasks.Attempt{Outcome: "failed", ExitCode: 1, Reason: "boom", Counted: true}}))
	fresh := e.submit(tasks.Spec{Module: e.module, MaxAttempts: 1})
	e.clock.Set(Start.Add(time.Minute))
	freshBefore, retriedBefore := e.get(fresh.ID), e.get(retried.ID)
	require.Equal(t, 1, retriedBefore.Attempt)
	both := e.claim("pool-a", 10)
	require.Equal(t, []int64{fresh.ID, retried.ID}, ids(both))
	cl, second := both[0], both[1]
	require.Equal(t, 1, cl.Lease.Token)
	require.Equal(t, 2, second.Lease.Token)
	require.Equal(t, []byte("cp"), second.Checkpoint)

	e.clock.Advance(time.Second)
	require.NoError(t, e.s.Release(e.ctx, []tasks.Lease{cl.Lease, second.Lease}))
	for _, want := range []tasks.Task{freshBefore, retriedBefore} {
		got := e.get(want.ID)
		requireTime(t, e.clock.Now(), got.UpdatedAt, "updated at")
		want.UpdatedAt = got.UpdatedAt
		require.Equal(t, want, got, "as if it had not been claimed")
		require.Equal(t, tasks.StateQueued, got.State)
		require.Empty(t, got.LeaseOwner)
		require.True(t, got.LeaseExpiry.IsZero())
		require.True(t, got.FinishedAt.IsZero())
	}
	require.Empty(t, e.attempts(fresh.ID), "no attempt is recorded")
	require.Len(t, e.attempts(retried.ID), 1, "no attempt is recorded")
	require.Equal(t, 1, e.get(retried.ID).Failures, "failures unchanged")
	requireTime(t, Start.Add(time.Minute), e.get(retried.ID).RunAt, "run at unchanged")

	// The released leases write nothing.
	for _, l := range []tasks.Lease{cl.Lease, second.Lease} {
		require.ErrorIs(t, e.complete(tasks.Completion{Lease: l, State: tasks.StateSucceeded}), tasks.ErrStaleLease)
		require.ErrorIs(t, e.s.SaveCheckpoint(e.ctx, l, []byte("late")), tasks.ErrStaleLease)
		require.ErrorIs(t, e.s.Progress(e.ctx, l, 1, 1), tasks.ErrStaleLease)
		lost, _, err := e.s.Heartbeat(e.ctx, []tasks.Lease{l}, lease)
		require.NoError(t, err)
		require.Equal(t, []tasks.Lease{l}, lost)
	}

	// Claimable at once, with the same attempt number (the token is reused)
	// and the checkpoint; MaxAttempts 1 was not used up.
	cl2 := e.claim("pool-b", 10)
	require.Equal(t, []int64{fresh.ID, retried.ID}, ids(cl2))
	require.Equal(t, tasks.Lease{TaskID: fresh.ID, Owner: "pool-b", Token: cl.Lease.Token}, cl2[0].Lease)
	require.Equal(t, tasks.Lease{TaskID: retried.ID, Owner: "pool-b", Token: second.Lease.Token}, cl2[1].Lease)
	require.Nil(t, cl2[0].Checkpoint)
	require.Equal(t, []byte("cp"), cl2[1].Checkpoint)

	// The released leases (same token, other owner) still write nothing.
	for _, l := range []tasks.Lease{cl.Lease, second.Lease} {
		require.ErrorIs(t, e.complete(tasks.Completion{Lease: l, State: tasks.StateSucceeded}), tasks.ErrStaleLease)
		require.ErrorIs(t, e.s.SaveCheckpoint(e.ctx, l, []byte("late")), tasks.ErrStaleLease)
		lost, _, err := e.s.Heartbeat(e.ctx, []tasks.Lease{l}, lease)
		require.NoError(t, err)
		require.Equal(t, []tasks.Lease{l}, lost)
	}
	cp, err := e.s.Checkpoint(e.ctx, retried.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("cp"), cp)
	for _, c := range cl2 {
		require.NoError(t, e.s.SaveCheckpoint(e.ctx, c.Lease, []byte("b")))
		require.NoError(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded, Result: []byte("b"),
			Attempt: tasks.Attempt{Outcome: "succeeded"}}))
		got := e.get(c.Task.ID)
		require.Equal(t, tasks.StateSucceeded, got.State)
		require.Equal(t, []byte("b"), got.Result)
		as := e.attempts(c.Task.ID)
		require.Equal(t, got.Attempt, len(as), "one record per attempt that ran")
		require.Equal(t, "pool-b", as[len(as)-1].Owner)
		require.Equal(t, c.Lease.Token, as[len(as)-1].Number)
	}

	// Cancellation requested: released as cancelled (as RecoverRunning
	// does), attempt number restored, no attempt recorded.
	cancelled := e.submit(e.spec())
	c := e.claimOne("pool-a", cancelled.ID)
	_, err = e.s.Cancel(e.ctx, cancelled.ID)
	require.NoError(t, err)
	require.NoError(t, e.s.Release(e.ctx, []tasks.Lease{c.Lease}))
	got := e.get(cancelled.ID)
	require.Equal(t, tasks.StateCancelled, got.State)
	require.Zero(t, got.Attempt)
	require.Zero(t, got.Failures)
	require.Empty(t, got.LeaseOwner)
	requireTime(t, e.clock.Now(), got.FinishedAt, "finished at")
	require.Empty(t, e.attempts(cancelled.ID))
	require.Empty(t, e.claim("pool-b", 10), "a cancelled task is not claimed")
	require.ErrorIs(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded}), tasks.ErrStaleLease)
}

// testReleaseStale: a lease that no longer holds its task is skipped, and
// the rest of the batch is released.
func testReleaseStale(t *testing.T, e *env) {
	ts := e.submitN(5, e.spec())
	cl := e.claim("pool-a", 5)
	require.Len(t, cl, 5)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl[0].Lease, State: tasks.StateSucceeded}))
	require.NoError(t, e.s.Release(e.ctx, []tasks.Lease{cl[1].Lease, cl[2].Lease, cl[3].Lease, cl[4].Lease}))
	cl2 := e.claim("pool-b", 4)
	require.Len(t, cl2, 4)
	require.Equal(t, cl[1].Lease.Token, cl2[0].Lease.Token, "released: the token is handed out again")

	// pool-b holds the tasks under pool-a's old tokens: pool-a's released
	// leases differ only by owner, and release nothing.
	require.NoError(t, e.s.Release(e.ctx, []tasks.Lease{cl[1].Lease, cl[2].Lease}))
	for _, c := range cl2 {
		got := e.get(c.Task.ID)
		require.Equal(t, tasks.StateRunning, got.State)
		require.Equal(t, "pool-b", got.LeaseOwner)
		require.Equal(t, c.Lease.Token, got.Attempt)
	}

	// pool-b's leases expire and pool-c takes the tasks over (token 2).
	e.clock.Advance(lease + time.Second)
	cl3 := e.claim("pool-c", 4)
	require.Len(t, cl3, 4, "pool-b's leases expired: taken over")
	require.Equal(t, 2, cl3[0].Lease.Token)
	e.clock.Advance(time.Second)

	before := map[int64]tasks.Task{}
	for _, task := range ts {
		before[task.ID] = e.get(task.ID)
	}
	require.NoError(t, e.s.Release(e.ctx, []tasks.Lease{
		cl[0].Lease,  // ended
		cl[1].Lease,  // released, reclaimed, taken over
		cl2[0].Lease, // taken over
		cl3[1].Lease, // held: released
		cl3[1].Lease, // the same lease twice: released once
		{TaskID: 424242, Owner: "pool-c", Token: 1},                          // unknown task
		{TaskID: cl3[2].Task.ID, Owner: "pool-c", Token: 1},                  // old token
		{TaskID: cl3[2].Task.ID, Owner: "pool-c", Token: 3},                  // future token
		{TaskID: cl3[3].Task.ID, Owner: "pool-a", Token: cl3[3].Lease.Token}, // other owner
	}))
	for _, task := range ts {
		got := e.get(task.ID)
		if task.ID != cl3[1].Task.ID {
			require.Equal(t, before[task.ID], got, "a stale lease changes nothing")
			continue
		}
		require.Equal(t, tasks.StateQueued, got.State)
		require.Equal(t, 1, got.Attempt, "restored once")
		require.Equal(t, 1, got.Failures, "pool-b's lost attempt is still counted")
		as := e.attempts(task.ID)
		require.Len(t, as, 1, "pool-b's lost attempt only")
		require.Equal(t, "pool-b", as[0].Owner)
	}
	require.Equal(t, tasks.StateSucceeded, e.get(cl[0].Task.ID).State)
	for _, c := range cl3 {
		if c.Task.ID != cl3[1].Task.ID {
			require.NoError(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded}))
		}
	}
	require.Equal(t, []int64{cl3[1].Task.ID}, ids(e.claim("pool-d", 10)))
}

func testList(t *testing.T, e *env) {
	a := e.submitN(5, tasks.Spec{Module: e.module, Queue: "a"})
	b := e.submitN(5, tasks.Spec{Module: e.module, Queue: "b"})
	cl := e.claim("p", 3) // a[0..2]
	require.NoError(t, e.complete(tasks.Completion{Lease: cl[0].Lease, State: tasks.StateSucceeded}))
	_, err := e.s.Cancel(e.ctx, b[4].ID)
	require.NoError(t, err)

	list := func(f tasks.ListFilter) []int64 {
		t.Helper()
		ts, err := e.s.List(e.ctx, f)
		require.NoError(t, err)
		return taskIDs(ts)
	}
	require.Equal(t, taskIDs(append(append([]tasks.Task{}, a...), b...)), list(tasks.ListFilter{}))
	require.Equal(t, []int64{a[1].ID, a[2].ID}, list(tasks.ListFilter{State: tasks.StateRunning}))
	require.Equal(t, []int64{a[0].ID}, list(tasks.ListFilter{State: tasks.StateSucceeded}))
	require.Equal(t, []int64{b[4].ID}, list(tasks.ListFilter{State: tasks.StateCancelled}))
	require.Empty(t, list(tasks.ListFilter{State: tasks.StateDead}))
	require.Equal(t, []int64{a[3].ID, a[4].ID, b[0].ID, b[1].ID, b[2].ID, b[3].ID}, list(tasks.ListFilter{State: tasks.StateQueued}))
	require.Equal(t, taskIDs(b), list(tasks.ListFilter{Queue: "b"}))
	require.Equal(t, []int64{a[3].ID, a[4].ID}, list(tasks.ListFilter{Queue: "a", State: tasks.StateQueued}))

	// Paging.
	var pages [][]int64
	after := int64(0)
	for {
		page := list(tasks.ListFilter{AfterID: after, Limit: 3})
		if len(page) == 0 {
			break
		}
		require.LessOrEqual(t, len(page), 3)
		pages = append(pages, page)
		after = page[len(page)-1]
	}
	require.Len(t, pages, 4)
	var flat []int64
	for _, p := range pages {
		flat = append(flat, p...)
	}
	require.Equal(t, list(tasks.ListFilter{}), flat)
	require.Equal(t, []int64{b[1].ID, b[2].ID}, list(tasks.ListFilter{Queue: "b", AfterID: b[0].ID, Limit: 2}))

	// The default page size.
	e.submitN(120, e.spec())
	require.Len(t, list(tasks.ListFilter{}), 100)
	full, err := e.s.List(e.ctx, tasks.ListFilter{State: tasks.StateRunning})
	require.NoError(t, err)
	for _, task := range full {
		require.Equal(t, tasks.StateRunning, task.State)
		require.Equal(t, e.module, task.Module)
	}
}

func testAttempts(t *testing.T, e *env) {
	task := e.submit(tasks.Spec{Module: e.module, MaxAttempts: 5})
	as := e.attempts(task.ID)
	require.NotNil(t, as)
	require.Empty(t, as)

	outcomes := []tasks.Attempt{
		{Outcome: "interrupted", ExitCode: 75, Reason: "shutdown"},
		{Outcome: "failed", ExitCode: 2, Reason: "out of memory", Counted: true},
		{Outcome: "timed_out", ExitCode: -1, Reason: "deadline", Counted: true},
	}
	for i, a := range outcomes {
		cl := e.claimOne(fmt.Sprint("owner-", i), task.ID)
		e.clock.Advance(time.Second)
		require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued, Attempt: a}))
	}
	cl := e.claimOne("last", task.ID)
	// The lease expires: the next claim records the attempt as lost.
	e.clock.Advance(lease + time.Second)
	cl2 := e.claimOne("next", task.ID)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl2.Lease, State: tasks.StateSucceeded,
		Attempt: tasks.Attempt{Outcome: "succeeded"}}))

	as = e.attempts(task.ID)
	require.Len(t, as, 5)
	for i, a := range as {
		require.Equal(t, i+1, a.Number, "oldest first")
		require.Equal(t, task.ID, a.TaskID)
		require.False(t, a.StartedAt.IsZero())
		require.False(t, a.EndedAt.IsZero())
		if i < 3 {
			want := outcomes[i]
			require.Equal(t, fmt.Sprint("owner-", i), a.Owner)
			require.Equal(t, want.Outcome, a.Outcome)
			require.Equal(t, want.ExitCode, a.ExitCode)
			require.Equal(t, want.Reason, a.Reason)
			require.Equal(t, want.Counted, a.Counted)
			require.Equal(t, time.Second, a.Duration())
		}
	}
	require.Equal(t, "last", as[3].Owner)
	require.Equal(t, cl.Lease.Token, as[3].Number)
	require.Equal(t, "lost", as[3].Outcome)
	require.True(t, as[3].Counted)
	require.Equal(t, "next", as[4].Owner)
	require.Equal(t, "succeeded", as[4].Outcome)
	got := e.get(task.ID)
	require.Equal(t, 3, got.Failures)
	require.Equal(t, 5, got.Attempt)
}

// testConcurrentPools runs two pools (different owners) on the same tasks
// at once, one of them moving the clock past every lease now and then so
// that takeovers race with completions. Whatever the interleaving, no
// attempt is claimed twice, and every task succeeds exactly once.
func testConcurrentPools(t *testing.T, e *env) {
	const n = 500
	want := map[int64]bool{}
	for _, task := range e.submitN(n, tasks.Spec{Module: e.module, MaxAttempts: 1000}) {
		want[task.ID] = true
	}

	var (
		mu        sync.Mutex
		claimed   = map[tasks.Lease]bool{} // every (task, owner, token) handed out
		tokens    = map[[2]int64]string{}  // (task, token) -> owner
		succeeded = map[int64]int{}        // task -> successful Completes
		stale     int
	)
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(succeeded) == n
	}
	pool := func(owner string, advance bool) error {
		for round := 0; !done(); round++ {
			if round > 200*n {
				return errors.New("no progress")
			}
			cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: owner, Max: 16, Lease: time.Minute})
			if err != nil {
				return err
			}
			mu.Lock()
			for _, c := range cl {
				if c.Lease.Owner != owner || c.Lease.Token != c.Task.Attempt || !want[c.Task.ID] {
					mu.Unlock()
					return fmt.Errorf("bad claim %+v", c.Lease)
				}
				key := [2]int64{c.Task.ID, int64(c.Lease.Token)}
				if prev, ok := tokens[key]; ok {
					mu.Unlock()
					return fmt.Errorf("task %d attempt %d claimed by %s and %s", key[0], key[1], prev, owner)
				}
				tokens[key] = owner
				claimed[c.Lease] = true
			}
			mu.Unlock()
			if advance && round%7 == 3 {
				e.clock.Advance(2 * time.Minute) // every lease held now is expired
			}
			var cs []tasks.Completion
			for _, c := range cl {
				err := e.s.SaveCheckpoint(e.ctx, c.Lease, []byte(owner))
				if err != nil && !errors.Is(err, tasks.ErrStaleLease) {
					return err
				}
				cs = append(cs, tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded, Result: []byte(owner),
					Attempt: tasks.Attempt{Outcome: "succeeded"}})
			}
			if len(cs) == 0 {
				continue
			}
			errs, err := e.s.Complete(e.ctx, cs)
			if err != nil {
				return err
			}
			mu.Lock()
			for i, err := range errs {
				switch {
				case err == nil:
					succeeded[cs[i].Lease.TaskID]++
				case errors.Is(err, tasks.ErrStaleLease):
					stale++
				default:
					mu.Unlock()
					return err
				}
			}
			mu.Unlock()
		}
		return nil
	}

	errc := make(chan error, 2)
	go func() { errc <- pool("pool-a", true) }()
	go func() { errc <- pool("pool-b", false) }()
	require.NoError(t, <-errc)
	require.NoError(t, <-errc)

	require.Len(t, succeeded, n)
	for id, count := range succeeded {
		require.Equal(t, 1, count, "task %d completed %d times", id, count)
	}
	for id := range want {
		got := e.get(id)
		require.Equal(t, tasks.StateSucceeded, got.State)
		require.Empty(t, got.LeaseOwner)
		as := e.attempts(id)
		require.Equal(t, got.Attempt, len(as), "one record per attempt")
		last := as[len(as)-1]
		require.Equal(t, "succeeded", last.Outcome)
		require.Equal(t, got.Result, []byte(last.Owner), "the result is the winning attempt's")
		for _, a := range as[:len(as)-1] {
			require.Equal(t, "lost", a.Outcome)
		}
	}
	t.Logf("%d attempts claimed, %d stale completions refused", len(claimed), stale)
}
