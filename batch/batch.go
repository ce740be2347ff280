package batch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/shutdown"
	"github.com/stint-run/stint/tasks"
)

// How outputs are made durable before they get their names (Config.Sync).
const (
	// SyncAuto makes each group of outputs durable with one syncfs(2)
	// where the file system and kernel honour it (Linux 5.8+ on ext2/3/4,
	// xfs, btrfs, f2fs, tmpfs), else with an fsync of each file.
	SyncAuto = "auto"
	// SyncFile fsyncs each output.
	SyncFile = "file"
)

// DefaultHoldBytes is Config.HoldBytes's default: 32 MiB.
const DefaultHoldBytes = 32 << 20

// DefaultStdout is the stdout cap (each output's largest size) of a batch
// whose Spec.Limits.Stdout is zero and whose Runner.Pool.Policy.Max.Stdout
// is zero too (else that maximum, runner batch's limits.max_stdout): an
// output is a file, not a result a store keeps for an API.
const DefaultStdout = 64 << 20

// Config is one batch. In, Out, Module and Runner.Store are required;
// every other zero field takes the default documented on it.
type Config struct {
	// Module is the WebAssembly (WASI command) module run once per input.
	Module []byte
	// ModuleName names the module in messages and in Summary.Module (its
	// path, say). Default "module".
	ModuleName string
	// CacheName is the module's name in the runtime's on-disk compilation
	// cache (sandbox.Runtime.NameInCache: what a listing of the cache
	// shows; runner batch gives its file's absolute path). "": none.
	CacheName string
	// In is the folder of the inputs (every regular file of its tree, not
	// those whose name, or a folder's on the way, starts with a dot; Out
	// is not walked if it is below In), a file, or a glob pattern
	// ("data/*.txt"; "data/**/*.txt" matches in every folder below data).
	// Links below In are never followed.
	In string
	// FilesFrom, instead of In, names a file listing the inputs' paths,
	// one a line ("-": stdin); NullSeparated: separated by NUL bytes
	// (find -print0). A path's folder is opened as named, the file
	// itself without following a link.
	FilesFrom     string
	NullSeparated bool
	// Out is the output folder, created if missing: Out/NAME for each
	// input that succeeded, NAME being its path below In (the tree is
	// mirrored; for FilesFrom the path as listed if it is relative and
	// without .., else the base name), or OutputName expanded. A failed
	// input's stderr goes to Out/.stint-batch/stderr/NAME (StderrDir). Out
	// may not be a folder of the inputs (compared by device and inode).
	Out string
	// OutputName, if set, is a template of each output's path below Out,
	// with GNU parallel's replacement strings ({}, {.}, {/}, {//}, {/.},
	// {#}; see expand in template.go and docs/batch.md).
	OutputName string
	// ArgTemplates makes Spec.Args templates, expanded per input as
	// OutputName is (so a guest learns its input's name: --arg {}).
	ArgTemplates bool
	// Spec is every task's template: its Limits, Args, Env and
	// MaxAttempts (0: 1, an input is tried once). Its Module, Queue,
	// IdempotencyKey and Input are the batch's own. Limits.Stdout, the
	// largest output, defaults to Runner.Pool.Policy.Max.Stdout, else
	// DefaultStdout. A run whose Limits or MaxAttempts differ from those
	// an earlier run stored a task with applies its own to the inputs it
	// tries again (failed before) and to those queued with no checkpoint
	// or snapshot to resume from: their tasks are replaced (deleted and
	// stored again).
	Spec tasks.Spec
	// Halt stops the batch once inputs failed (GNU parallel's --halt);
	// the inputs not done run at the next run. Zero: never.
	Halt Halt
	// SkipFailed makes a run skip the inputs that failed in an earlier
	// one (counted in Summary.SkippedFailed, their stderr kept) instead of
	// trying them again, the default.
	SkipFailed bool
	// Workers is how many inputs run at once. Default Runner.Pool.Workers,
	// else the number of CPUs.
	Workers int
	// Sync is SyncAuto (default) or SyncFile.
	Sync string
	// HoldBytes is the most input content the batch keeps in memory at
	// once: each input is read once, to hash it, and its content kept
	// until its task ends, so that its attempts need not read the file
	// again. An input read while HoldBytes are held is read again at its
	// attempt, and not run if it changed since. Default DefaultHoldBytes;
	// negative: none kept.
	HoldBytes int64
	// Runner configures the runner the batch opens on its store. Its
	// Pool's Workers, Queues, ClaimBatch, ClaimAhead and Input are the
	// batch's (a pool alone on the batch's queue); Pool.OnEvent, if set,
	// gets every event too. Pool.Policy.MaxInput caps an input's size.
	Runner stint.Config
	// Open opens the runner. Default stint.Open. (runner batch creates
	// its data directory first.)
	Open func(ctx context.Context, cfg stint.Config) (*stint.Runner, error)
	// Shutdown is the phased stop a cancelled ctx or a signal runs (its
	// drain, cancel and force budgets; package shutdown's defaults).
	Shutdown shutdown.Config
	// HookTimeouts bounds the batch's shutdown hooks by name ("submit",
	// "workers", "outputs", "sandbox", "store", "logs"); a hook not named
	// gets Shutdown.HookTimeout.
	HookTimeouts map[string]time.Duration
	// HandleSignals makes SIGINT and SIGTERM stop the batch as a
	// cancelled ctx does (running inputs may finish or checkpoint), and a
	// second one force the running guests to stop.
	HandleSignals bool
	// OnSignal, if set with HandleSignals, is called with 1 for the first
	// stop signal and 2 for the second (runner batch says what each does).
	OnSignal func(n int)
	// OnRun, if set, is called once the batch's pool runs, with the
	// batch's Status (safe to read from any goroutine until Run returns).
	// The func it returns, if not nil, is called when the batch ends,
	// before its stop and its Summary (runner batch clears its progress
	// line there).
	OnRun func(*Status) func()
	// OnDone, if set, is called as each input is done (its files
	// written, or found done by an earlier run), from the batch's own
	// goroutines (several at once): it must not block for long.
	OnDone func(Result)
	// WantAttempt, if set, is asked about each input done in an earlier
	// run (Result.AlreadyDone or SkippedFailed) before OnDone gets it:
	// true makes the batch read that input's last attempt from the store
	// into Result.Attempt (runner batch --joblog: for an input that has
	// no line yet). Called from the batch's own goroutines.
	WantAttempt func(Result) bool
	// OnStopped, if set, is called for each attempt the batch's stop
	// ended without ending its input (a signal, --halt now, a cancelled
	// ctx: its outcome "interrupted" or "forced"), with Result.Stopped
	// set: the input is not done, and the next run runs it. Called from
	// the pool's event goroutine: it must not block for long.
	OnStopped func(Result)
	// Logger receives the batch's logs ("batch starting", the stop's
	// report...). Default: zap.NewNop().
	Logger *zap.Logger
}

// Summary is what a batch did. Its JSON is runner batch --json's.
type Summary struct {
	// Module, In, FilesFrom and Out are Config's ModuleName, In,
	// FilesFrom and Out.
	Module    string `json:"module"`
	In        string `json:"in"`
	FilesFrom string `json:"files_from,omitempty"`
	Out       string `json:"out"`
	// Total is the number of inputs.
	Total int `json:"total"`
	// Succeeded ran in this run; AlreadyDone had succeeded in an earlier
	// one (its output kept, or written from the store if missing).
	Succeeded   int `json:"succeeded"`
	AlreadyDone int `json:"already_done"`
	// Failed ended in this run without an output (Failures says why).
	Failed int `json:"failed"`
	// SkippedFailed had failed in an earlier run and were not tried again
	// (Config.SkipFailed); they are in Failures too.
	SkippedFailed int `json:"skipped_failed"`
	// Halted: Config.Halt stopped the batch (Halt says which).
	Halted bool   `json:"halted,omitempty"`
	Halt   string `json:"halt,omitempty"`
	// Left were not done when the batch was stopped; Interrupted of them
	// were running (they resume from their checkpoints).
	Left        int  `json:"left"`
	Interrupted int  `json:"interrupted"`
	Stopped     bool `json:"stopped"`
	// Seconds is how long Run took; Rate the inputs that ended in this
	// run per second.
	Seconds  float64   `json:"seconds"`
	Rate     float64   `json:"files_per_second"`
	Failures []Failure `json:"failures"`
}

// Failure is one input that failed: its outcome (the attempt's, like
// "failed" or "timeout"; "unreadable" or "not_written"), and the tail of
// the guest's stderr, also written to StderrFile.
type Failure struct {
	Input      string `json:"input"`
	Outcome    string `json:"outcome"`
	ExitCode   int    `json:"exit_code,omitempty"`
	Reason     string `json:"reason,omitempty"`
	StderrFile string `json:"stderr_file,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
}

// Planned is what a batch would do for one input (Plan).
type Planned struct {
	// Seq is the input's sequence number ({#}); Input its path as
	// listed; Output the path its output would be written to; Args the
	// guest's arguments for it.
	Seq    int      `json:"seq"`
	Input  string   `json:"input"`
	Output string   `json:"output"`
	Args   []string `json:"args"`
}

// Result is an input that is done (Config.OnDone).
type Result struct {
	// Input is the file's absolute path; Name its output's path below Out.
	Input, Name string
	// Seq is its sequence number ({#}); Args the guest's arguments.
	Seq  int
	Args []string
	// TaskID is its task in the store (0: none, an input that could not
	// be read).
	TaskID int64
	// AlreadyDone: it had succeeded in an earlier run; SkippedFailed: it
	// had failed in one and was not tried again (Config.SkipFailed).
	AlreadyDone, SkippedFailed bool
	// Attempt is its last attempt in this run (nil if none ran: done or
	// failed before, or unreadable), or for an input done before, the
	// last attempt of its task when Config.WantAttempt asked for it.
	Attempt *tasks.Attempt
	// OutputBytes is the size of its output (0 for a failure).
	OutputBytes int
	// Failure is why it failed; nil when it succeeded.
	Failure *Failure
	// Stopped: the batch's stop ended its attempt (Config.OnStopped); the
	// input is not done. Signal is the number of the signal that stopped
	// the batch (2 SIGINT, 15 SIGTERM), 0 when no signal did (--halt now,
	// a cancelled ctx).
	Stopped bool
	Signal  int
}

// Counts is a snapshot of how a batch goes (Status.Counts).
type Counts struct {
	// Total inputs; Succeeded and Failed in this run, AlreadyDone in an
	// earlier one, SkippedFailed failed in one; Running now; Left not done
	// yet.
	Total, Succeeded, AlreadyDone, Failed, SkippedFailed, Running, Left int
}

// ErrOutputCollision is what an InputError wraps when outputs would
// overwrite inputs or each other: Out is a folder of the inputs, two
// inputs have the same output name, or an output name leaves Out.
var ErrOutputCollision = errors.New("batch: outputs would collide")

// ErrStopped is what a StoppedError is: the batch was stopped before
// every input was done.
var ErrStopped = errors.New("batch: stopped before every input was done")

// ErrUnrecorded: the store could not record some attempts (they run
// again at the next run).
var ErrUnrecorded = errors.New("batch: attempts not recorded")

// InputError is a check before any work that failed (In, Out, the
// inputs' sizes, the Config, the module does not compile): nothing was
// written. Its message names In and Out as runner batch's flags do
// (--in, --out).
type InputError struct {
	Err       error
	collision bool
}

// Error is the cause's message.
func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap is the cause.
func (e *InputError) Unwrap() error { return e.Err }

// Is reports ErrOutputCollision for a collision.
func (e *InputError) Is(target error) bool { return target == ErrOutputCollision && e.collision }

func inputErrorf(format string, a ...any) error {
	return &InputError{Err: fmt.Errorf(format, a...)}
}

func collisionErrorf(format string, a ...any) error {
	return &InputError{Err: fmt.Errorf(format, a...), collision: true}
}

// StoppedError is Run's error when a cancelled ctx or a signal stopped
// the batch before every input was done: run the same Config again to
// resume it. errors.Is(err, ErrStopped) holds.
type StoppedError struct {
	// Done of Total inputs are done; Left are not, Interrupted of them
	// were running and resume from their checkpoints.
	Done, Total, Left, Interrupted int
}

// Error says what was done and how to resume.
func (e *StoppedError) Error() string {
	return fmt.Sprintf("batch stopped: %d of %d inputs done, %d left (%d interrupted resume from their checkpoints); run the same batch again to resume",
		e.Done, e.Total, e.Left, e.Interrupted)
}

// Is reports ErrStopped.
func (e *StoppedError) Is(target error) bool { return target == ErrStopped }

// unrecordedError is ErrUnrecorded with its count.
type unrecordedError struct{ n int }

func (e unrecordedError) Error() string {
	return fmt.Sprintf("the store could not record %d attempts; they run again at the next run", e.n)
}

func (e unrecordedError) Is(target error) bool { return target == ErrUnrecorded }

// Queue is the queue of the batch writing to the folder out (an absolute
// path): one per output folder, so a batch's pool runs only its own tasks.
func Queue(out string) string {
	sum := sha256.Sum256([]byte(out))
	return "batch-" + hex.EncodeToString(sum[:6])
}
