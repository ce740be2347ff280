package tasks

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// State is where a task stands in its life cycle.
//
//	queued ──claim──▶ running ──exit 0──────────────▶ succeeded
//	  ▲  ▲               │ ──fail/trap/timeout──▶ (attempts left? queued with backoff : dead)
//	  │  └──interrupted──┘   (shutdown, cooperative or forced: attempt not counted, checkpoint kept)
//	  └──retry (manual)── dead / cancelled          running ──cancel──▶ cancelled
type State string

// The task states. A failed attempt with attempts left and an interrupted
// attempt both put the task back in StateQueued (with a later RunAt for a
// backoff); the attempt history tells them apart.
const (
	StateQueued    State = "queued"
	StateRunning   State = "running"
	StateSucceeded State = "succeeded"
	StateDead      State = "dead"
	StateCancelled State = "cancelled"
)

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	switch s {
	case StateQueued, StateRunning, StateSucceeded, StateDead, StateCancelled:
		return true
	}
	return false
}

// Terminal reports whether no worker will run a task in state s again
// (without a manual retry).
func (s State) Terminal() bool {
	return s == StateSucceeded || s == StateDead || s == StateCancelled
}

// Mount exposes a host directory to the guest. Only directories on the
// runner's allow-list may be mounted; read-only unless Writable. Both
// paths are absolute (Spec.Validate); the runner resolves HostPath's
// symlinks before it checks and mounts it.
type Mount struct {
	HostPath  string `json:"host_path"`
	GuestPath string `json:"guest_path"`
	Writable  bool   `json:"writable,omitempty"`
}

// Limits bounds one attempt of a task. A zero field means "the runner's
// default" (limits.* in the configuration).
type Limits struct {
	// MemoryBytes caps the guest's linear memory.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Timeout is the wall-clock budget of one attempt.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Stdout, Stderr and Checkpoint cap the bytes the guest may write there.
	Stdout     int64 `json:"stdout,omitempty"`
	Stderr     int64 `json:"stderr,omitempty"`
	Checkpoint int64 `json:"checkpoint,omitempty"`
}

// Spec is what a submitter asks for: everything needed to run a task.
type Spec struct {
	// Module is the hex sha256 of a module already stored with PutModule.
	Module string `json:"module"`
	// Input is given to the guest on stdin.
	Input []byte `json:"input,omitempty"`
	// Args are the guest's argv after argv[0] (which is the module hash).
	Args []string `json:"args,omitempty"`
	// Env holds the only environment variables the guest sees.
	Env map[string]string `json:"env,omitempty"`
	// Mounts are host directories given to the guest.
	Mounts []Mount `json:"mounts,omitempty"`
	// Limits of each attempt; zero fields take the runner's defaults.
	Limits Limits `json:"limits"`
	// MaxAttempts counts failed attempts (interrupted ones are not counted);
	// 0 means DefaultMaxAttempts.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Priority: higher runs first among ready tasks of a queue.
	Priority int `json:"priority,omitempty"`
	// Queue name; "" means DefaultQueue.
	Queue string `json:"queue,omitempty"`
	// IdempotencyKey, when set, makes a second Submit with the same key
	// return the first task instead of creating another.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// RunAt delays the first attempt; zero means now.
	RunAt time.Time `json:"run_at,omitzero"`
	// Labels are the submitter's metadata, kept with the task and
	// returned with it (a tenant, a job name); the runner does not read
	// them. At most MaxLabels, each key up to MaxLabelKey bytes and each
	// value up to MaxLabelValue bytes.
	Labels map[string]string `json:"labels,omitempty"`
}

// Defaults applied by Spec.WithDefaults.
const (
	DefaultQueue       = "default"
	DefaultMaxAttempts = 3
)

// The caps on a task's labels (Spec.Validate).
const (
	MaxLabels     = 64
	MaxLabelKey   = 128
	MaxLabelValue = 1024
)

// WithDefaults returns s with the queue and attempt defaults filled in.
func (s Spec) WithDefaults() Spec {
	if s.Queue == "" {
		s.Queue = DefaultQueue
	}
	if s.MaxAttempts <= 0 {
		s.MaxAttempts = DefaultMaxAttempts
	}
	return s
}

// Validate reports what is wrong with s, as an error wrapping ErrInvalidSpec,
// or nil. It checks s as submitted: zero fields that WithDefaults fills in
// are valid. Every Store's Submit calls it, so all backends agree on what a
// valid spec is. Mounts are not checked against an allow-list here (the
// store does not know it); the runner does that.
func (s Spec) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidSpec, fmt.Sprintf(format, a...))
	}
	if !ValidModuleHash(s.Module) {
		if s.Module == "" {
			return bad("module is empty; want the hex sha256 of a stored module")
		}
		return bad("module %q is not a hex sha256 (64 lowercase hex digits)", s.Module)
	}
	if s.MaxAttempts < 0 {
		return bad("max_attempts is %d; want 0 (default %d) or more", s.MaxAttempts, DefaultMaxAttempts)
	}
	l := s.Limits
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"limits.memory_bytes", l.MemoryBytes},
		{"limits.timeout", int64(l.Timeout)},
		{"limits.stdout", l.Stdout},
		{"limits.stderr", l.Stderr},
		{"limits.checkpoint", l.Checkpoint},
	} {
		if f.v < 0 {
			return bad("%s is negative (%d)", f.name, f.v)
		}
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return bad("env name %q is empty or holds '=' or NUL", k)
		}
	}
	for i, m := range s.Mounts {
		if m.HostPath == "" || m.GuestPath == "" {
			return bad("mount %d needs both host_path and guest_path", i)
		}
		if !path.IsAbs(m.GuestPath) {
			return bad("mount %d: guest_path %q is not absolute; want a path like /data", i, m.GuestPath)
		}
		if !filepath.IsAbs(m.HostPath) {
			return bad("mount %d: host_path %q is not absolute; want the full path of a directory on the runner's host", i, m.HostPath)
		}
	}
	if len(s.Labels) > MaxLabels {
		return bad("%d labels; at most %d", len(s.Labels), MaxLabels)
	}
	for k, v := range s.Labels {
		switch {
		case k == "" || len(k) > MaxLabelKey:
			return bad("label name %.40q is empty or longer than %d bytes", k, MaxLabelKey)
		case len(v) > MaxLabelValue:
			return bad("label %q: value longer than %d bytes", k, MaxLabelValue)
		case !utf8.ValidString(k) || !utf8.ValidString(v) || strings.ContainsRune(k+v, 0):
			return bad("label %q: name and value must be UTF-8 without NUL", k)
		}
	}
	if strings.ContainsRune(s.Queue, 0) || strings.ContainsRune(s.IdempotencyKey, 0) {
		return bad("queue and idempotency_key may not hold NUL")
	}
	return nil
}

// ValidModuleHash reports whether h looks like a module id: the hex sha256
// of the module's bytes, 64 lowercase hex digits (as PutModule returns it).
func ValidModuleHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

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
	// LastError explains the latest failed attempt.
	LastError  string    `json:"last_error,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
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
	// Resumed reports whether the attempt started from a checkpoint.
	Resumed bool `json:"resumed"`
	// Stderr is the tail of what the guest wrote to stderr during the
	// attempt: its last MaxStderrTail bytes, as valid UTF-8 (StderrTail).
	// Empty for a lost attempt.
	Stderr string `json:"stderr,omitempty"`
}

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

// Duration is how long the attempt ran.
func (a Attempt) Duration() time.Duration { return a.EndedAt.Sub(a.StartedAt) }
