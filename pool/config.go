package pool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"go.uber.org/zap"
)

// DefaultLease is Config.Lease's default, and `runner serve`'s (its lease
// key): a runner that dies loses its tasks to the others this long after
// its last heartbeat. Shorter moves a dead runner's work sooner but costs
// more heartbeat writes and lets a shorter stall lose the lease; see
// docs/deployment.md, "Sizing leases".
const DefaultLease = 10 * time.Second

// Config configures a worker Pool. Every zero field takes the default
// documented on it.
type Config struct {
	// Workers is how many tasks run at once. Default: the number of CPUs.
	Workers int
	// Queues limits the pool to these queues, each with its own maximum
	// concurrency (0: up to Workers). Nil: every queue.
	Queues map[string]int
	// Owner names this pool in leases; unique per process.
	// Default: host-pid-random.
	Owner string
	// Lease is how long a claim holds without a heartbeat before another
	// pool may take the task over. Default DefaultLease.
	Lease time.Duration
	// Heartbeat is how often leases are renewed (and cancellations and
	// progress exchanged with the store). Default Lease/3.
	Heartbeat time.Duration
	// ProgressEvery is how often the guests' latest progress reports are
	// written to the store while they run (only those that changed; also at
	// each heartbeat and at the end of an attempt). Default 1s.
	ProgressEvery time.Duration
	// ClaimBatch caps the tasks claimed, and completions written, in one
	// transaction, and so what the pool claims ahead (ClaimAhead decides
	// how much below it). Default 1024: with tasks of tens of
	// microseconds ClaimAhead, not this cap, sizes the claims (on
	// PostgreSQL, 1,024 made a trivial task 1.2x as fast as 256, and 256
	// 1.3x as fast as 64: docs/design/postgres.md, "The runner's flow"). What is claimed ahead holds at most tasks.ClaimInline (64
	// KiB) of input and checkpoint a task: 64 MiB at most at the default,
	// reached only by tasks that run in tens of microseconds with
	// 64-KiB inputs.
	ClaimBatch int
	// ClaimAhead is how much work the pool claims beyond its free workers,
	// in time: it keeps up to Workers*ClaimAhead/(average attempt duration)
	// extra tasks claimed (at most ClaimBatch), so that short tasks are
	// claimed and completed in batches while long tasks are never hoarded
	// (with attempts of ClaimAhead or longer nothing is claimed ahead).
	// Tasks claimed ahead that no worker takes for 5 ClaimAhead (at least
	// Poll) go back to the queue (Stats.GivenBack): every worker is then
	// busy with longer attempts than the average said, and another runner
	// may be idle (not in a pool Adopt hands tasks to: they were claimed
	// to run here). Default 20ms; negative disables claiming ahead.
	ClaimAhead time.Duration
	// Poll is how long an idle pool waits before it looks for work again
	// (a Submit through this pool wakes it at once). Default 100ms.
	Poll time.Duration
	// CancelGrace is how long a running task whose cancellation was
	// requested has to stop after stop_requested before it is forced.
	// Default 5s.
	CancelGrace time.Duration
	// SnapshotEvery is how often, of its run time, a resumable guest's
	// snapshot is stored while it runs (package comment of snapshot.go).
	// Zero: only when a drain or its deadline suspends it.
	SnapshotEvery time.Duration
	// MaxSnapshot caps an encoded snapshot, in bytes; a larger one is not
	// stored. Default DefaultMaxSnapshot.
	MaxSnapshot int64
	// LostLimit is how many attempts in a row a task may lose without
	// progress (its runners died running it) before it is dead
	// (tasks.ClaimRequest.LostLimit). Default tasks.DefaultLostLimit.
	LostLimit int
	// Retry spaces failed attempts.
	Retry tasks.RetryPolicy
	// Policy is what a task may ask for of this pool (tasks.CheckSpec):
	// Policy.MountsAllow lists the host directories tasks may mount,
	// symlinks resolved (empty: no mounts); Policy.Max caps each limit
	// (zero fields: no cap beyond the sandbox runtime's); Policy.MaxInput
	// caps the input (0: no cap). Submit checks a spec against it, as an
	// early error. Whoever submitted the task, the pool checks every
	// attempt's mounts against Policy.MountsAllow again before running: a
	// task that asks for another directory, or one that does not exist,
	// ends dead at once with outcome KindRefused.
	Policy tasks.Policy
	// Input, when set, gives each attempt's stdin in place of the task's
	// stored Input: for tasks whose input lives outside the store (runner
	// batch reads each input file when its attempt starts, and checks it
	// against the sha256 it was submitted with). It is called on the
	// worker's goroutine before each attempt, with the attempt's context;
	// an error ends the task dead at once, outcome KindInputUnavailable,
	// the error its reason. Default: none (the stored Input).
	Input func(ctx context.Context, t tasks.Task) ([]byte, error)
	// OnEvent, when set, is called with each event of the attempts the
	// pool runs (started, checkpointed, ended), on the pool's goroutines:
	// it must not block (package stint's Runner.Subscribe buffers and
	// drops). Default: none.
	OnEvent func(Event)
	// CompileRetry is how long a task whose module went past the
	// sandbox's compile budget (sandbox.ErrCompileTimeout) waits before
	// its next attempt, which is counted: the compilation goes on in the
	// background meanwhile, and once it ends the module runs (a budget
	// passed on a loaded machine says nothing of the module). Default
	// sandbox.DefaultCompileTimeout.
	CompileRetry time.Duration
	// Logger receives the pool's logs. Default: zap.NewNop().
	Logger *zap.Logger
	// Now is the pool's clock. Default time.Now.
	Now func() time.Time
}

// WithDefaults fills every zero field.
func (c Config) WithDefaults() Config {
	if c.Workers <= 0 {
		c.Workers = runtime.NumCPU()
	}
	if c.Owner == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		c.Owner = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = c.Lease / 3
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = time.Second
	}
	if c.ClaimBatch <= 0 {
		c.ClaimBatch = 1024
	}
	if c.ClaimAhead == 0 {
		c.ClaimAhead = 20 * time.Millisecond
	}
	if c.MaxSnapshot <= 0 {
		c.MaxSnapshot = DefaultMaxSnapshot
	}
	if c.LostLimit <= 0 {
		c.LostLimit = tasks.DefaultLostLimit
	}
	if c.CompileRetry <= 0 {
		c.CompileRetry = sandbox.DefaultCompileTimeout
	}
	if c.Poll <= 0 {
		c.Poll = 100 * time.Millisecond
	}
	if c.CancelGrace <= 0 {
		c.CancelGrace = 5 * time.Second
	}
	c.Retry = c.Retry.WithDefaults()
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	var errs []error
	if c.Heartbeat >= c.Lease {
		errs = append(errs, fmt.Errorf("pool: heartbeat (%s) must be shorter than the lease (%s)", c.Heartbeat, c.Lease))
	}
	for q, n := range c.Queues {
		if q == "" || n < 0 {
			errs = append(errs, fmt.Errorf("pool: queue %q: want a name and a concurrency >= 0", q))
		}
	}
	return errors.Join(errs...)
}

// Stats are the pool's counters. Running is the number of attempts in
// flight; the others count ended attempts since the pool started.
type Stats struct {
	// Running: attempts in flight (claimed and not yet recorded, including
	// those claimed ahead that no worker has started).
	Running int
	// Held: of Running, the tasks claimed that wait for a free worker
	// (claimed ahead); the store shows them claimed. GivenBack: tasks
	// claimed ahead that waited too long behind busy workers and went
	// back to the queue, for any runner.
	Held, GivenBack int
	// Started: attempts a worker has started.
	Started int
	// Finished: attempts that ended on their own (any outcome).
	Finished int
	// Interrupted: attempts that stopped on the pool's RequestStop.
	Interrupted int
	// Forced: attempts the pool's ForceStop ended.
	Forced int
	// Lost: attempts whose result was dropped: their lease was taken over,
	// or the store could not record them (Unrecorded).
	Lost int
	// Unrecorded: attempts whose results the store still refused when the
	// pool stopped (a full disk, say); until then the pool keeps them and
	// retries. Their tasks stay running in the store until their lease
	// expires or the next start recovers them, and then run again.
	Unrecorded int
	// LostToCrashes: attempts lost to crashes (their runners died while
	// running them: killed, out of memory, a lost machine) that the
	// pool's store recorded as lost: expired leases its claims took over
	// and attempts recovered at the runner's start, those that made their
	// task dead (tasks.LostLimitReason) included. Each is counted once,
	// by the runner whose store call recorded it; 0 with a store that
	// does not count them (tasks/sqlite and tasks/postgres do:
	// LostAttempts).
	LostToCrashes int
	// Suspended: attempts suspended (a drain, a deadline) with their
	// snapshot stored; Resumed: attempts that resumed from a snapshot.
	Suspended, Resumed int
	// Snapshots, SnapshotBytes and SnapshotTime: the snapshots this pool
	// stored, their encoded bytes, and the time encoding and writing them
	// took (beside their guests). SnapshotDeltas: those of them stored as
	// what changed since the one before (tasks.Store.AppendSnapshot).
	Snapshots      int
	SnapshotDeltas int
	SnapshotBytes  int64
	SnapshotTime   time.Duration
}
