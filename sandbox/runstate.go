package sandbox

import (
	"bytes"
	"context"
	"io"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/stint-run/stint/sandbox/internal/extismkernel"
	"github.com/stint-run/stint/sandbox/internal/memory"
	"github.com/stint-run/stint/sandbox/internal/mountfs"
)

// runState is everything one run (a task's Run, or one plugin call) keeps
// while its guest runs. Run (run.go) and Plugin.CallWith (plugin.go) fill
// it before the guest starts and read the results from it once it has
// returned; in between, the guest's host functions reach it through the
// call's context (stateOf), the ioSlot (slot.go) and the memory allocator
// through pointers of their own, and the stop watchdog through its entry.
// Nothing in it outlives the run, except an abandoned run's, which the
// stray guest keeps until it ends. What only a Run needs is in taskRun
// (a plugin call clears its pooled runState at each call: the less, the
// better).
type runState struct {
	// How the run is stopped (hostmod.go's stop_requested, deadline_ms and
	// checkpoint_save; the interrupt function). hard is the hard context:
	// once it is done the guest is forced. stopCh is the caller's soft stop
	// (Spec.Stop, CallOptions.Stop); softAt is when the deadline's soft stop
	// starts (Timeout-Grace; 0: none) and deadline when the hard one comes
	// (0: none), both readings of monoNow's clock (callctx.go). sawStop
	// records that stop_requested returned 1 (Outcome.StopRequested).
	hard     context.Context
	stopCh   <-chan struct{}
	softAt   int64
	sawStop  atomic.Bool
	deadline int64
	// call: the run is a plugin call, not a task's attempt; the outcome's
	// messages say so (noun). inline: the call's guest runs on its
	// caller's goroutine, so an abandoned call was waited for (the
	// watchdog's message says so).
	call   bool
	inline atomic.Bool

	// Checkpoints, in and out (hostmod.go). checkpoint is what the run
	// started with (nil: none), maxCP the cap of one save
	// (Limits.MaxCheckpoint) and save the caller's store (nil: none).
	// lastCP and saved are the last checkpoint saved and how many saves
	// succeeded (Outcome.Checkpoint, CheckpointsSaved).
	checkpoint []byte
	maxCP      int64
	save       func(ctx context.Context, blob []byte) error
	lastCP     []byte
	saved      int

	// Progress (hostmod.go): the caller's callback (nil: none) and the
	// guest's last report (Outcome.ProgressDone, ProgressTotal).
	onProgress func(done, total int64)
	progDone   int64
	progTotal  int64

	// The run's stdio, reached through its ioSlot (its memory budget is
	// the allocator's: taskRun's, or a plugin instance's). stdin is
	// &inputReader for an in-memory input (input holds its bytes); stdout
	// and stderr are capped (Limits.MaxStdout, MaxStderr); mounts is the
	// mounts' open files and disk budget (mountfs; nil: no mounts).
	stdin          io.Reader
	input          bytes.Reader
	inputReader    stdinReader
	stdout, stderr cappedWriter
	mounts         *mountfs.Budget

	watch runWatch    // the stop watchdog's entry (watchdog.go)
	work  workCounter // the work counter and budget (work.go)

	ident  *callIdentity        // who the run is for, for host functions (hostfunc.go); nil: nobody
	ext    *extismkernel.Kernel // an Extism plugin call's kernel (extism.go); nil otherwise
	http   httpCall             // an Extism plugin call\'s HTTP (extism_http.go)
	output []byte               // a run's export's output (Spec.Export, Outcome.Output)
	env    *guestEnv            // the guest's environment (environ.go); nil: empty

	// Suspend and resume (resumable.go): the caller's ask (Spec.Suspend;
	// nil: never), whether the guest was asked (pointSet), the frames it
	// saved or is reading back, the stdin it read, and the offset of its
	// monotonic clock from monoNow's (a resumed guest's clock goes on).
	resumable    bool // the guest may be asked to unwind (suspendAsked)
	pointSet     bool // beside resumable: a bool alone would pad 7 bytes, and the run's one allocation take the next size class
	suspendCh    <-chan struct{}
	suspendAfter int
	// Background snapshots (Spec.SnapshotEvery): how often, when the
	// next is due (monoNow's clock) and whether the guest unwinds for one.
	snapEvery   time.Duration
	nextSnap    int64
	snapshotDue bool
	// snapPoints (tests: Spec.snapshotPoints) takes one every this many
	// interrupts instead; pointsSeen counts them since the last.
	snapPoints, pointsSeen int
	// suspendAtDeadline: the guest was asked to suspend by its deadline.
	suspendAtDeadline bool
	frames            []uint64
	stdinRead         int64
	stdinFull         bool // a read of stdin in this fd_read call filled its buffer (waitStdin; wasiListener resets it)
	unwoundInRead     bool // the guest unwinds from a read of stdin (Snapshot.reading)
	clockOffset       int64
	// A guest that can unwind in a blocking host call (a sleep, a read of
	// stdin): its instance, for the call to make it unwind; and for a
	// guest suspended asleep (runState.sleep) what is left of the sleep,
	// for the call made again when it rewinds (sleepPending).
	inst         api.Module
	sleepLeft    int64
	sleepPending bool

	// interrupts counts the interrupt calls; lastYield is when the guest
	// last yielded its P (maybeYield, monoNow's clock).
	interrupts int
	lastYield  int64
}

// guestClock is the monotonic clock the guest sees, in nanoseconds.
func (st *runState) guestClock() int64 { return monoNow() + st.clockOffset }

// taskRun is a Run's state: its runState, its hard context and its
// memory budget, in one allocation (a plugin call has its own context,
// and a budget per instance).
type taskRun struct {
	st     runState
	runCtx callContext
	budget memory.Budget
}

// externalStop reports whether the caller asked the run to stop.
func (st *runState) externalStop() bool {
	select {
	case <-st.stopCh:
		return true
	default:
		return false
	}
}

// stopRequested reports whether the guest is asked to stop: by the caller,
// or because its attempt deadline is near.
func (st *runState) stopRequested() bool {
	return st.externalStop() || (st.softAt != 0 && monoNow() >= st.softAt)
}

// deadlineTime is the run's deadline as a time.Time (zero: none).
func (st *runState) deadlineTime() time.Time {
	if c, ok := st.hard.(*callContext); ok {
		return c.deadlineTime()
	}
	return time.Time{}
}

// runStateKey is the context key of the run's runState (run.go puts it
// there; callContext answers it for plugin calls).
type runStateKey struct{}

// stateOf returns the runState of the call ctx belongs to, nil if none.
func stateOf(ctx context.Context) *runState {
	st, _ := ctx.Value(runStateKey{}).(*runState)
	return st
}

// noun is what the outcome's messages call the run: "call" for a plugin
// call, "attempt" for a task's run.
func (st *runState) noun() string {
	if st.call {
		return "call"
	}
	return "attempt"
}
