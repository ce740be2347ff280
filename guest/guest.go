package guest

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"
	"unsafe"
)

// ExitInterrupted is the exit code of a guest that stopped because the runner
// asked it to (EX_TEMPFAIL from sysexits.h). A guest that sees
// [StopRequested] return true saves a checkpoint with [SaveCheckpoint] and
// then exits with this code; the runner records the attempt as interrupted and
// resumes the task from the checkpoint later. Exiting 75 when no stop was
// requested counts as an ordinary failure.
const ExitInterrupted = 75

// Result codes of the checkpoint_save host function.
const (
	codeOK             = 0
	codeTooLarge       = -1
	codeLeaseLost      = -2
	codeCheckpointFail = -3
)

var (
	// ErrCheckpointTooLarge is returned by [SaveCheckpoint] when the blob is
	// larger than the task's checkpoint limit. Nothing was stored; the previous
	// checkpoint, if any, is kept.
	ErrCheckpointTooLarge = errors.New("guest: checkpoint too large")

	// ErrLeaseLost is returned by [SaveCheckpoint] when this attempt no longer
	// owns the task (its lease expired and another attempt may be running it).
	// Nothing was stored, and nothing this attempt does will be; the guest
	// should exit.
	ErrLeaseLost = errors.New("guest: lease lost, this attempt is stale")

	// ErrCheckpointFailed is returned by [SaveCheckpoint] when the runner
	// could not store the blob durably. The previous checkpoint, if any, is
	// kept; the guest may carry on and try again later.
	ErrCheckpointFailed = errors.New("guest: checkpoint could not be stored")

	// ErrUnknownCode is wrapped by the error [SaveCheckpoint] returns when the
	// host answers with a result code this SDK does not know (a newer host).
	// The checkpoint must be assumed not stored.
	ErrUnknownCode = errors.New("guest: unknown host result code")
)

// StopRequested reports whether the runner has asked this task to stop,
// because the runner shuts down, the task was cancelled, or the attempt's
// deadline is near. Once true it stays true. The call is cheap (tens of
// nanoseconds), but a tight loop should still only check every few thousand
// iterations.
//
// A guest that sees true should save a checkpoint and call [ExitStopped].
func StopRequested() bool {
	return stopRequested() != 0
}

// SaveCheckpoint stores b as the task's checkpoint, replacing the previous
// one. It returns once the runner has stored it durably, so a later attempt of
// the task (after a stop, a crash of the runner or a failure) sees it through
// [LoadCheckpoint]. The runner copies b; the caller may reuse it at once.
//
// An empty b stores an empty checkpoint, which is not the same as none:
// [LoadCheckpoint] then returns an empty slice and true.
//
// It returns nil on success, [ErrCheckpointTooLarge] if b exceeds the task's
// checkpoint limit, [ErrLeaseLost] if this attempt is stale, [ErrCheckpointFailed]
// if the runner failed to store it, and an error wrapping [ErrUnknownCode]
// for any other answer. On error nothing was stored.
func SaveCheckpoint(b []byte) error {
	if uint64(len(b)) > math.MaxInt32 {
		// The ABI carries lengths as i32: no host can accept this.
		return ErrCheckpointTooLarge
	}
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	code := checkpointSave(p, uint32(len(b)))
	return saveError(code)
}

// saveError maps a checkpoint_save result code to an error.
func saveError(code int32) error {
	switch code {
	case codeOK:
		return nil
	case codeTooLarge:
		return ErrCheckpointTooLarge
	case codeLeaseLost:
		return ErrLeaseLost
	case codeCheckpointFail:
		return ErrCheckpointFailed
	default:
		return fmt.Errorf("guest: checkpoint_save returned %d: %w", code, ErrUnknownCode)
	}
}

// LoadCheckpoint returns the checkpoint this attempt started with, and true,
// or nil and false if the task has none (its first attempt, or no earlier
// attempt saved one). Checkpoints saved by this attempt are not visible here:
// the result is the same on every call. Each call returns a fresh copy.
func LoadCheckpoint() ([]byte, bool) {
	size := checkpointSize()
	if size < 0 {
		return nil, false
	}
	buf := make([]byte, size)
	if size == 0 {
		return buf, true
	}
	n := checkpointLoad(unsafe.Pointer(&buf[0]), uint32(size))
	if n < 0 {
		return nil, false
	}
	if n < size {
		buf = buf[:n]
	}
	return buf, true
}

// Progress reports that the task has done done units of work out of total.
// The runner shows the latest report in `runner tasks show` and the API;
// it is not stored in the checkpoint. Units are the guest's choice (items,
// bytes, percent); a total of 0 or less means unknown.
func Progress(done, total int64) {
	progress(done, total)
}

// Deadline returns how long this attempt may still run before it is ended by
// force, and true; or 0 and false if the attempt has no deadline. The runner
// sets [StopRequested] a little before the deadline, so a guest that checks it
// regularly does not need this; it helps to size batches of work.
func Deadline() (time.Duration, bool) {
	ms := deadlineMs()
	if ms < 0 {
		return 0, false
	}
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64), true
	}
	return time.Duration(ms) * time.Millisecond, true
}

// ExitStopped ends the guest with [ExitInterrupted] (75), the exit code that
// tells the runner the guest stopped because it was asked to. Call it after
// [StopRequested] returned true and the checkpoint was saved. Like [os.Exit]
// it does not return and deferred functions do not run.
func ExitStopped() {
	os.Exit(ExitInterrupted)
}
