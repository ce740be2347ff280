package sandbox

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind says how a run ended.
type Kind string

// The outcome kinds. Every run ends in exactly one.
const (
	// KindSucceeded: the guest exited 0 (or returned from _start).
	KindSucceeded Kind = "succeeded"
	// KindFailed: the guest exited with a non-zero code (ExitCode).
	KindFailed Kind = "failed"
	// KindTrapped: a wasm trap (unreachable, out-of-bounds access, stack
	// overflow, a bad pointer passed to a host function). Message and
	// Stack say where.
	KindTrapped Kind = "trapped"
	// KindInterrupted: the guest exited 75 (EX_TEMPFAIL) after it was asked
	// to stop. Deadline tells whether the attempt deadline asked.
	KindInterrupted Kind = "interrupted"
	// KindForced: the caller's hard context ended the guest.
	KindForced Kind = "forced"
	// KindTimedOut: the attempt deadline forced the guest.
	KindTimedOut Kind = "timed_out"
	// KindMemoryLimit: the guest needed more memory than its limit.
	KindMemoryLimit Kind = "memory_limit"
	// KindOutputLimit: the guest wrote more than its stdout or stderr cap.
	KindOutputLimit Kind = "output_limit"
	// KindInvalidModule: the bytes are not a valid, runnable wasm module.
	KindInvalidModule Kind = "invalid_module"
	// KindBadImport: the module imports a function the runner does not
	// provide.
	KindBadImport Kind = "bad_import"
	// KindWorkLimit: the guest used up its work budget (Limits.Work,
	// work.go): the guest's fault, like KindMemoryLimit.
	KindWorkLimit Kind = "work_limit"
	// KindUnstoppable: the module is refused for good (for the life of
	// the Runtime) because the stop watchdog abandoned two of its runs or
	// plugin calls (Config.StopWatchdog): the second abandoned run ends
	// with it, and so does every later run, call or compile of the module.
	// The guest's fault, like KindInvalidModule.
	KindUnstoppable Kind = "unstoppable"
)

// The outcome kinds of an attempt the worker pool (package pool) ends
// without running it: a sandbox run never ends in them. They are defined
// here so that every kind has one owner and one list (Kinds); pool names
// them pool.KindRefused and pool.KindInputUnavailable.
const (
	// KindRefused: the runner refused to start the attempt because the
	// task asks for something this runner does not grant (a mount outside
	// its allow-list or of a missing directory, a work budget on a runtime
	// that does not count loops). The task is dead at once.
	KindRefused Kind = "refused"
	// KindInputUnavailable: the input the pool keeps outside the store
	// (pool.Config.Input) could not be given: the file it lives in changed,
	// went or cannot be read. The task is dead at once.
	KindInputUnavailable Kind = "input_unavailable"
)

// Kinds returns every kind, in documentation order: a run's, then the
// pool's (KindRefused, KindInputUnavailable).
func Kinds() []Kind {
	return []Kind{KindSucceeded, KindFailed, KindTrapped, KindInterrupted, KindForced,
		KindTimedOut, KindMemoryLimit, KindOutputLimit, KindWorkLimit, KindInvalidModule, KindBadImport, KindUnstoppable,
		KindRefused, KindInputUnavailable}
}

// ExitInterrupted is the exit code (EX_TEMPFAIL) a guest uses to say "I was
// asked to stop, my checkpoint is saved".
const ExitInterrupted = 75

// Permanent reports whether running the same module again cannot help
// (the module itself is unusable).
func (k Kind) Permanent() bool {
	return k == KindInvalidModule || k == KindBadImport || k == KindUnstoppable
}

// Outcome is what happened in one run.
type Outcome struct {
	Kind Kind
	// ExitCode is the guest's exit code for KindSucceeded, KindFailed and
	// KindInterrupted.
	ExitCode uint32
	// Message explains the outcome in one line, for people.
	Message string
	// Stack is the wasm stack trace of a trap.
	Stack string
	// Err is the underlying error, if any.
	Err error `json:"-"`
	// Deadline reports that the attempt deadline (not the caller) asked
	// the guest to stop or forced it.
	Deadline bool
	// StopRequested reports that stop_requested returned 1 at least once
	// the guest could see it.
	StopRequested bool
	// Output is what a plugin's export returned (Plugin.Call); nil for a
	// task.
	Output []byte
	// Warm reports that a plugin call ran in an instance kept from an
	// earlier call.
	Warm bool
	// Stdout and Stderr are what the guest wrote (up to their caps).
	Stdout, Stderr []byte
	// StdoutBytes and StderrBytes count every byte the guest tried to write.
	StdoutBytes, StderrBytes int64
	// Checkpoint is the last checkpoint the guest saved in this run and
	// CheckpointsSaved how many saves succeeded.
	Checkpoint       []byte
	CheckpointsSaved int
	// ProgressDone and ProgressTotal are the guest's last progress report.
	ProgressDone, ProgressTotal int64
	// PeakMemoryBytes is the largest size the guest's memory reached, in
	// bytes (a whole number of 64 KiB pages).
	PeakMemoryBytes int64
	// WorkUnits is the work the guest did, in work units counted by the
	// stop checks (work.go): the same for the same module and input, not
	// instructions. In InterruptWazero mode it counts function entries
	// only, not loops.
	WorkUnits int64
	// Duration is the wall time from instantiation to return.
	Duration time.Duration
	// Abandoned reports that the guest had not ended Config.StopWatchdog
	// after its forced stop: the run was given up on and its goroutine left
	// running. Only Kind, Message, Deadline, StopRequested and Duration are
	// set (the guest's output still belongs to the guest).
	Abandoned bool
}

// Success reports whether the run succeeded.
func (o *Outcome) Success() bool { return o.Kind == KindSucceeded }

// String is a one-line summary: the kind and the message.
func (o *Outcome) String() string {
	if o.Message == "" {
		return string(o.Kind)
	}
	return string(o.Kind) + ": " + o.Message
}

// ModuleError is returned by Compile for a module that cannot run. Its Kind
// is KindInvalidModule, KindBadImport, KindMemoryLimit or KindUnstoppable.
type ModuleError struct {
	Kind    Kind
	Message string
	Err     error
}

// Error implements error.
func (e *ModuleError) Error() string { return string(e.Kind) + ": " + e.Message }

// Unwrap returns the underlying wazero error, if any.
func (e *ModuleError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInvalidModule) and its siblings work.
func (e *ModuleError) Is(target error) bool {
	switch target {
	case ErrInvalidModule:
		return e.Kind == KindInvalidModule
	case ErrBadImport:
		return e.Kind == KindBadImport
	case ErrMemoryLimit:
		return e.Kind == KindMemoryLimit
	case ErrUnstoppable:
		return e.Kind == KindUnstoppable
	}
	return false
}

// Sentinel errors for the conditions a ModuleError or a host callback reports.
var (
	ErrInvalidModule = errors.New("invalid module")
	ErrBadImport     = errors.New("bad import")
	ErrMemoryLimit   = errors.New("memory limit")
	// ErrLeaseLost is what a CheckpointFunc returns when the attempt no
	// longer owns its task; the guest sees checkpoint_save return -2.
	ErrLeaseLost = errors.New("lease lost")
	// ErrClosed: the Runtime was closed.
	ErrClosed = errors.New("sandbox: runtime closed")
)

// OutcomeFromError turns a Compile or Run error into the Outcome of a run
// that never started: the ModuleError's kind, KindForced for ErrClosed (the
// host is stopping: not the module's fault), else KindInvalidModule.
func OutcomeFromError(err error) *Outcome {
	if errors.Is(err, ErrClosed) {
		// Not the module's fault: the host is stopping.
		return &Outcome{Kind: KindForced, Message: "not run: the sandbox runtime was closed", Err: err}
	}
	var me *ModuleError
	if errors.As(err, &me) {
		return &Outcome{Kind: me.Kind, Message: me.Message, Err: err}
	}
	return &Outcome{Kind: KindInvalidModule, Message: err.Error(), Err: err}
}

// splitTrap separates wazero's "wasm error: X\nwasm stack trace:\n..." into
// the message and the stack.
func splitTrap(err error) (msg, stack string) {
	s := err.Error()
	if i := strings.Index(s, "\nwasm stack trace:"); i >= 0 {
		msg, stack = s[:i], strings.TrimSpace(s[i+len("\nwasm stack trace:"):])
	} else {
		msg = s
	}
	return strings.TrimPrefix(msg, "wasm error: "), stack
}

func exitMessage(code uint32) string {
	return fmt.Sprintf("exit code %d", code)
}
