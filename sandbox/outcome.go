package sandbox

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind says how a run ended (docs/sandbox.md, "The outcome").
type Kind string

// The outcome kinds: every run ends in exactly one. The last two are the
// pool's, for an attempt it ends without running it (one owner: Kinds).
const (
	KindSucceeded        Kind = "succeeded"         // the guest exited 0 (or returned from _start)
	KindFailed           Kind = "failed"            // the guest exited with a non-zero code (ExitCode)
	KindTrapped          Kind = "trapped"           // a wasm trap; Message and Stack say where
	KindInterrupted      Kind = "interrupted"       // the guest exited 75 after it was asked to stop
	KindSuspended        Kind = "suspended"         // the guest was suspended (Spec.Suspend); Outcome.Snapshot resumes it
	KindForced           Kind = "forced"            // the caller's hard context ended the guest
	KindTimedOut         Kind = "timed_out"         // the attempt deadline forced the guest
	KindMemoryLimit      Kind = "memory_limit"      // the guest needed more memory than its limit
	KindOutputLimit      Kind = "output_limit"      // the guest wrote more than its stdout or stderr cap
	KindInvalidModule    Kind = "invalid_module"    // the bytes are not a valid, runnable wasm module
	KindBadImport        Kind = "bad_import"        // the module imports a function the runner does not provide
	KindWorkLimit        Kind = "work_limit"        // the guest used up its work budget (Limits.Work)
	KindUnstoppable      Kind = "unstoppable"       // the watchdog abandoned two of the module's runs: refused for good
	KindRefused          Kind = "refused"           // the task asks for what this runner does not grant
	KindInputUnavailable Kind = "input_unavailable" // the input the pool keeps outside the store is gone
)

// Kinds returns every kind, a run's, then the pool's.
func Kinds() []Kind {
	return []Kind{KindSucceeded, KindFailed, KindTrapped, KindInterrupted, KindSuspended, KindForced,
		KindTimedOut, KindMemoryLimit, KindOutputLimit, KindWorkLimit, KindInvalidModule, KindBadImport, KindUnstoppable,
		KindRefused, KindInputUnavailable}
}

// exitInterrupted is the exit code (EX_TEMPFAIL) a guest uses to say "I was
// asked to stop, my checkpoint is saved" (guest.ExitInterrupted).
const exitInterrupted = 75

// Permanent reports whether running the same module again cannot help.
func (k Kind) Permanent() bool {
	return k == KindInvalidModule || k == KindBadImport || k == KindUnstoppable
}

// Outcome is what happened in one run. Each field in detail: docs/sandbox.md.
type Outcome struct {
	Kind                        Kind
	ExitCode                    uint32        // for KindSucceeded, KindFailed and KindInterrupted
	Message                     string        // the outcome in one line, for people
	Stack                       string        // the wasm stack trace of a trap
	Err                         error         `json:"-"` // the underlying error, if any
	Deadline                    bool          // the attempt deadline (not the caller) asked the guest to stop or forced it
	StopRequested               bool          // stop_requested returned 1 at least once
	Output                      []byte        // what a plugin's export returned (Plugin.Call, Spec.Export)
	Warm                        bool          // a plugin call ran in an instance kept from an earlier call
	Stdout, Stderr              []byte        // what the guest wrote, up to their caps
	StdoutBytes, StderrBytes    int64         // every byte it tried to write
	Checkpoint                  []byte        // the last checkpoint saved in this run
	CheckpointsSaved            int           // how many saves succeeded
	ProgressDone, ProgressTotal int64         // the guest's last progress report
	PeakMemoryBytes             int64         // the largest size the guest's memory reached
	WorkUnits                   int64         // the work the guest did, in work units (not instructions)
	Duration                    time.Duration // wall time from instantiation to return
	Abandoned                   bool          // the stop watchdog gave up on the guest (few fields set)
	Snapshot                    *Snapshot     `json:"-"` // a KindSuspended run's snapshot, to resume it (Spec.Resume)
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

// ModuleError is Compile's error for a module that cannot run.
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

// Sentinel errors: those a ModuleError matches (errors.Is), then those an
// Outcome.Err or a ModuleError wraps.
var (
	ErrInvalidModule = errors.New("invalid module")
	ErrBadImport     = errors.New("bad import")
	ErrMemoryLimit   = errors.New("memory limit")
	ErrLeaseLost     = errors.New("lease lost")              // Spec.SaveCheckpoint's: the attempt no longer owns its task
	ErrClosed        = errors.New("sandbox: runtime closed") // the Runtime was closed

	ErrCompileTimeout = errors.New("compile budget exceeded")               // compiled longer than Config.CompileTimeout (KindInvalidModule)
	ErrCompileMemory  = errors.New("compile memory over its limit")         // estimated over Config.CompileMemory (KindInvalidModule)
	ErrUnstoppable    = errors.New("module could not be stopped")           // abandoned twice by the stop watchdog (KindUnstoppable)
	ErrCallStack      = errors.New("call stack over its limit")             // over ModuleLimits.MaxCallStack (KindTrapped)
	ErrWASICount      = errors.New("WASI call with a count over its limit") // a WASI call's count over what Stint lets through (KindTrapped)
	ErrWorkLimit      = errors.New("work budget used up")                   // over Limits.Work (KindWorkLimit)

	// Run's error for a work budget in InterruptWazero mode.
	ErrWorkNeedsChecks = errors.New("a work budget (limits.work) needs sandbox.interrupt=checks: in wazero mode loops are not counted")
)

// OutcomeFromError turns a Compile or Run error into the Outcome of a run
// that never started: the ModuleError's kind, KindForced for ErrClosed.
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
