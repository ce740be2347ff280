package tasks

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Task is a stored task: its spec and where it stands.
type Task struct {
	ID int64 `json:"id"`
	Spec
	State State `json:"state"`
	// Attempt is the number of the latest attempt (0 before the first claim).
	// It is also the fencing token of the running attempt.
	Attempt int `json:"attempt"`
	// Failures counts the attempts charged against MaxAttempts.
	Failures int `json:"failures"`
	// LeaseOwner and LeaseExpiry describe the running attempt's lease.
	LeaseOwner  string    `json:"lease_owner,omitempty"`
	LeaseExpiry time.Time `json:"lease_expiry,omitzero"`
	// StartedAt is when the latest attempt was claimed (zero before the
	// first claim; Store.Release leaves it).
	StartedAt time.Time `json:"started_at,omitzero"`
	// BeganAt is when a worker began the attempt (Store.MarkBegun); zero
	// while it is only claimed.
	BeganAt time.Time `json:"began_at,omitzero"`
	// CancelRequested is set when a running task was asked to cancel.
	CancelRequested bool `json:"cancel_requested,omitempty"`
	// CheckpointSize is the size of the stored checkpoint, -1 if none.
	CheckpointSize int `json:"checkpoint_size"`
	// ProgressDone and ProgressTotal are the latest progress report.
	ProgressDone  int64 `json:"progress_done"`
	ProgressTotal int64 `json:"progress_total"`
	// Result is the guest's stdout after success.
	Result []byte `json:"result,omitempty"`
	// InputSize and ResultSize are the sizes of Input and Result in bytes,
	// also set where the bytes are left out (Store.List).
	InputSize  int `json:"input_size"`
	ResultSize int `json:"result_size"`
	// Snapshot describes the task's stored snapshot (nil: none), and
	// Snapshots counts the snapshots stored for it (Store.SaveSnapshot).
	Snapshot  *SnapshotInfo `json:"snapshot,omitempty"`
	Snapshots int           `json:"snapshots"`
	// LostStreak counts the attempts lost in a row (their runners died)
	// since the task last made progress (a snapshot or checkpoint stored,
	// an attempt that ended); at ClaimRequest.LostLimit the task is dead.
	LostStreak int `json:"lost_streak,omitempty"`
	// LastError explains the latest failed attempt.
	LastError  string    `json:"last_error,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// Shown is State, or StateClaimed for a running task no worker began.
func (t Task) Shown() State {
	if t.State == StateRunning && t.BeganAt.IsZero() {
		return StateClaimed
	}
	return t.State
}

// Attempt records how one attempt ended.
type Attempt struct {
	TaskID int64 `json:"task_id"`
	// Number is the attempt's fencing token.
	Number    int       `json:"number"`
	Owner     string    `json:"owner"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	// Outcome is the sandbox outcome kind ("succeeded", "failed",
	// "interrupted", "forced", "timed_out", ...), or "lost" when the lease
	// was taken over or the runner died.
	Outcome  string `json:"outcome"`
	ExitCode int    `json:"exit_code"`
	Reason   string `json:"reason,omitempty"`
	// Counted reports whether this attempt was charged against MaxAttempts.
	Counted bool `json:"counted"`
	// Resumed reports whether the attempt started from a checkpoint or a
	// snapshot; ResumedFrom is the snapshot (nil: none).
	Resumed     bool          `json:"resumed"`
	ResumedFrom *SnapshotInfo `json:"resumed_from,omitempty"`
	// Stderr is the tail of what the guest wrote to stderr during the
	// attempt: its last MaxStderrTail bytes, as valid UTF-8 (StderrTail).
	// Empty for a lost attempt.
	Stderr string `json:"stderr,omitempty"`
	// Work is the work the attempt's guest did, in the sandbox's work
	// units (sandbox.Outcome.WorkUnits): the same for the same module and
	// input, not instructions. 0 for a lost attempt (and for attempts
	// recorded before the column existed).
	Work int64 `json:"work_units,omitempty"`
}

// Duration is how long the attempt ran.
func (a Attempt) Duration() time.Duration { return a.EndedAt.Sub(a.StartedAt) }

// MaxStderrTail caps Attempt.Stderr, in bytes.
const MaxStderrTail = 4 << 10

// StderrTail is what an attempt keeps of a guest's stderr: the last
// MaxStderrTail bytes at most, invalid UTF-8 and NUL bytes replaced (every
// backend stores it as text).
func StderrTail(b []byte) string {
	if len(b) > MaxStderrTail {
		b = b[len(b)-MaxStderrTail:]
		// Do not start in the middle of a character.
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}
