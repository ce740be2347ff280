package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// Run runs the conformance suite against the stores open returns, one
// fresh store per test; tests run in parallel. open must return a fresh,
// empty store whose clock is now (it never sleeps: the suite moves the
// clock), and arrange for the store to be closed when t ends (t.Cleanup);
// it may call t.Fatal.
//
// The tests are grouped in sections, one file each, named
// TestConformance/<section>/<test>. A section named after an optional
// interface of tasks (capability.go: OwnRecoverer, Pinger, LockInspector)
// tests its documented contract and skips, saying so, when the store does
// not implement it.
func Run(t *testing.T, open func(t *testing.T, now func() time.Time) tasks.Store) {
	for _, sec := range sections {
		t.Run(sec.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range sec.tests {
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
		})
	}
}

// test is one test of the suite, on a fresh store.
type test struct {
	name string
	fn   func(t *testing.T, e *env)
}

// sections are the suite's tests by topic (the file of each in brackets).
var sections = []struct {
	name  string
	tests []test
}{
	{"Submit", []test{ // submit.go, caps.go
		{"ModuleContentAddressing", testModules},
		{"SubmitUnknownModule", testSubmitUnknownModule},
		{"SubmitInvalidSpec", testSubmitInvalidSpec},
		{"SubmitCaps", testSubmitCaps},
		{"SubmitDefaultsAndRoundTrip", testSubmitRoundTrip},
		{"OnRetry", testOnRetry},
		{"NotFound", testNotFound},
		{"Idempotency", testIdempotency},
		{"IdempotencyConcurrent", testIdempotencyConcurrent},
	}},
	{"SubmitMany", []test{ // bulk.go
		{"SubmitMany", testSubmitMany},
		{"SubmitManyInvalid", testSubmitManyInvalid},
		{"SubmitManyLarge", testSubmitManyLarge},
		{"SubmitManyConcurrent", testSubmitManyConcurrent},
		{"SubmitManyAfterPrune", testSubmitManyAfterPrune},
		{"SubmitManyClaimed", testSubmitManyClaimed},
	}},
	{"Claim", []test{ // claim.go
		{"ClaimOrder", testClaimOrder},
		{"ClaimRequestEdges", testClaimEdges},
		{"RunAtDelay", testRunAtDelay},
		{"QueueMaxima", testQueueMaxima},
		{"ClaimLeavesOutLargePayloads", testClaimInline},
		{"ClaimManyDistinct", testClaimManyDistinct},
		{"ConcurrentPools", testConcurrentPools},
	}},
	{"Fair", []test{ // fair.go
		{"TenantsInTurn", testFairTurns},
		{"Weights", testFairWeights},
		{"NoBankedTurns", testFairNoBankedTurns},
		{"WithinPriorityRunAtMaximaPauses", testFairWithinRules},
		{"TenantName", testTenantName},
		{"Bound", testFairBound},
		{"ConcurrentPools", testConcurrentFairPools}, // claim.go
		{"MaxRunning", testTenantMaxRunning},
		{"MaxRunningConcurrent", testTenantMaxRunningConcurrent},
		{"WorkQuota", testTenantWorkQuota},
		{"Rate", testTenantRate},
		{"RateConcurrent", testTenantRateConcurrent}, // claimAtOnce: queuelimits.go
		{"Counts", testTenantCounts},
	}},
	{"QueueLimits", []test{ // queuelimits.go
		{"MaxRunning", testQueueMaxRunning},
		{"MaxRunningConcurrent", testQueueMaxRunningConcurrent},
		{"Rate", testQueueRate},
		{"RateConcurrent", testQueueRateConcurrent},
		{"WorkQuota", testQueueWorkQuota},
	}},
	{"Leases", []test{ // lease.go
		{"LeaseExpiryTakeover", testTakeover},
		{"LeaseExpiryDead", testTakeoverDead},
		{"StartedAt", testStartedAt},
		{"Begun", testBegun},
		{"Fencing", testFencing},
		{"Heartbeat", testHeartbeat},
		{"Release", testRelease},
		{"ReleaseStale", testReleaseStale},
	}},
	{"Checkpoints", []test{ // checkpoint.go
		{"Checkpoint", testCheckpoint},
		{"Progress", testProgress},
		{"InterruptedKeepsCheckpoint", testInterrupted},
	}},
	{"Completion", []test{ // complete.go
		{"CompleteSucceeded", testCompleteSucceeded},
		{"CompleteRetryBackoff", testCompleteRetry},
		{"CompleteDeadAndCancelled", testCompleteDeadCancelled},
		{"CompleteInvalidState", testCompleteInvalidState},
		{"CompleteBatch", testCompleteBatch},
		{"CompleteRandomBatches", testCompleteRandomBatches}, // completerandom.go
		{"DeadAfterMaxAttempts", testDeadAfterMaxAttempts},
		{"Cancel", testCancel},
		{"Retry", testRetry},
	}},
	{"Listing", []test{ // list.go
		{"List", testList},
		{"ListLeavesOutPayloads", testListPayloads},
		{"ListPaging", testListPaging},
		{"Attempts", testAttempts},
		{"AttemptHistory", testAttemptHistory}, // history.go
	}},
	// Methods of tasks.Store that were optional interfaces once, their
	// sections named after them so that their tests keep their names.
	{"Summarizer", []test{ // summary.go, ops.go
		{"Summary", testSummary},
		{"Waiting", testWaiting},
		{"SucceededByQueue", testCountsSucceededByQueue},
	}},
	{"Operator", []test{ // ops.go
		{"PauseQueue", testPause},
		{"Delete", testDelete},
		{"Bulk", testBulk},
	}},
	{"BatchActor", []test{ // actions.go
		{"ActBatch", testActBatch},
	}},
	{"ModuleNamer", []test{ // ops.go
		{"ModuleNames", testModuleNames},
	}},
	{"Pruner", []test{ // prune.go
		{"Prune", testPrune},
	}},
	{"Snapshotter", []test{ // snapshot.go
		{"SaveAndRead", testSnapshotSaveRead},
		{"Fencing", testSnapshotFencing},
		{"Append", testSnapshotAppend},
		{"DroppedWhenEndedOrDeleted", testSnapshotDropped},
		{"Prune", testSnapshotPrune},
		{"LostStreak", testLostStreak},
		{"RecoverLostStreak", testRecoverLostStreak},
		{"LostResumed", testLostResumed},
	}},
	{"RunningRecoverer", []test{ // recover.go
		{"RecoverRunning", testRecoverRunning},
	}},
	{"Waker", []test{ // waker.go
		{"WakesAfterEachReadyingWrite", testWakerWakes},
		{"ListenAgainAfterStop", testWakerListenAgain},
	}},
	{"RunnerRegistry", []test{ // ops.go
		{"Runners", testRunners},
	}},
	{"ScheduleStore", []test{ // ops.go
		{"Schedules", testSchedules},
		{"OnePerPeriod", testScheduleOnePerPeriod},
		{"Overlap", testScheduleOverlap},
		{"Due", testScheduleDue},
	}},
	// The optional interfaces (tasks/capability.go).
	{"OwnRecoverer", []test{ // recover.go
		{"RecoverOwn", testRecoverOwn},
		{"RecoverOwnNothing", testRecoverOwnNothing},
	}},
	{"Pinger", []test{ // probe.go
		{"Ping", testPing},
	}},
	{"LockInspector", []test{ // probe.go
		{"LockHolder", testLockHolder},
	}},
}

// capability returns the store as the optional interface C, or skips the
// test, saying so, when the store does not implement it.
func capability[C any](t *testing.T, e *env) C {
	t.Helper()
	c, ok := e.s.(C)
	if !ok {
		t.Skipf("%T does not implement %s", e.s, reflect.TypeFor[C]())
	}
	return c
}

// requireLostAttempts requires a store that counts the attempts it
// recorded as lost (LostAttempts, which tasks/sqlite and tasks/postgres
// have: pool.Stats.LostToCrashes) to have counted want.
func (e *env) requireLostAttempts(want int64, msgAndArgs ...any) {
	e.t.Helper()
	if lc, ok := e.s.(interface{ LostAttempts() int64 }); ok {
		require.Equal(e.t, want, lc.LostAttempts(), msgAndArgs...)
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

// all lists every task matching f, page after page.
func (e *env) all(f tasks.ListFilter) []tasks.Task {
	e.t.Helper()
	var out []tasks.Task
	for {
		page, err := e.s.List(e.ctx, f)
		require.NoError(e.t, err)
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		f.AfterID = page[len(page)-1].ID
	}
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
