package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// Mount exposes a host directory to the guest. Only directories on the
// runner's allow-list may be mounted; read-only unless Writable. Both
// paths are absolute (Spec.Validate); the runner resolves HostPath's
// symlinks before it checks and mounts it. A task with a writable mount is
// not suspended (snapshots) unless the mount says Snapshots: the task
// accepts that what the guest writes to it after a snapshot is not undone
// when it resumes from that snapshot, and may be written again
// (docs/guest-abi.md, "Snapshots, time limits and retries").
type Mount struct {
	HostPath  string `json:"host_path"`
	GuestPath string `json:"guest_path"`
	Writable  bool   `json:"writable,omitempty"`
	Snapshots bool   `json:"snapshots,omitempty"`
}

// Limits bounds one attempt of a task. A zero field means "the runner's
// default" (limits.* in the configuration). Memory and output are in bytes
// everywhere (the sandbox rounds memory up to whole 64 KiB pages). In JSON,
// timeout is written as a string in Go syntax ("30s", "1m30s") and read
// from one or from integer nanoseconds (as time.Duration encodes, and as
// versions before written it); an unknown key is an error.
type Limits struct {
	// MemoryBytes caps the guest's linear memory.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Timeout is the wall-clock budget of one attempt.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Stdout, Stderr and Checkpoint cap the bytes the guest may write there.
	Stdout     int64 `json:"stdout,omitempty"`
	Stderr     int64 `json:"stderr,omitempty"`
	Checkpoint int64 `json:"checkpoint,omitempty"`
	// DiskBytes and DiskFiles are the disk budget of the task's writable
	// mounts, all together, per attempt: the bytes the guest may write or
	// add to files (a sparse file's hole counts at its size) and the
	// files, directories, symlinks and links it may create. Past either,
	// the guest's call fails with ENOSPC and the guest runs on.
	DiskBytes int64 `json:"disk_bytes,omitempty"`
	DiskFiles int64 `json:"disk_files,omitempty"`
	// Work is the attempt's work budget, in work units (Attempt.Work):
	// past it the guest is ended with outcome work_limit, deterministically
	// (the same module and input end at the same point). 0: the runner's
	// default (none unless configured). Only in the sandbox's checks
	// interrupt mode.
	Work int64 `json:"work,omitempty"`
}

// MarshalJSON implements json.Marshaler: the fields of Limits, sizes in
// bytes, with timeout as a duration string in Go syntax ("30s", "1m30s"),
// which UnmarshalJSON reads back (and reads as integer nanoseconds too, as
// earlier versions wrote it). Zero fields are left out.
func (l Limits) MarshalJSON() ([]byte, error) {
	type plain Limits // without the methods
	var timeout string
	if l.Timeout != 0 {
		timeout = l.Timeout.String()
	}
	return json.Marshal(struct {
		plain
		Timeout string `json:"timeout,omitempty"`
	}{plain(l), timeout})
}

// UnmarshalJSON implements json.Unmarshaler: the fields of Limits, with
// timeout as integer nanoseconds or a string like "30s"; an unknown key is
// an error (a misspelt limit is not silently the default).
func (l *Limits) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var raw struct {
		MemoryBytes int64           `json:"memory_bytes"`
		Timeout     json.RawMessage `json:"timeout"`
		Stdout      int64           `json:"stdout"`
		Stderr      int64           `json:"stderr"`
		Checkpoint  int64           `json:"checkpoint"`
		DiskBytes   int64           `json:"disk_bytes"`
		DiskFiles   int64           `json:"disk_files"`
		Work        int64           `json:"work"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	d, err := decodeDuration(raw.Timeout)
	if err != nil {
		return err
	}
	*l = Limits{MemoryBytes: raw.MemoryBytes, Timeout: d, Stdout: raw.Stdout, Stderr: raw.Stderr, Checkpoint: raw.Checkpoint,
		DiskBytes: raw.DiskBytes, DiskFiles: raw.DiskFiles, Work: raw.Work}
	return nil
}

// decodeDuration reads a JSON integer (nanoseconds) or a string in Go
// syntax ("30s", "1m30s"); absent or null is 0.
func decodeDuration(b json.RawMessage) (time.Duration, error) {
	if len(b) == 0 || string(b) == "null" {
		return 0, nil
	}
	if b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return 0, err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("duration %q: want Go syntax like \"30s\" or \"5m\", or an integer number of nanoseconds", s)
		}
		return v, nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return 0, fmt.Errorf("duration %s: want an integer number of nanoseconds, or a string like \"30s\"", b)
	}
	return time.Duration(n), nil
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
	// Tenant names who the task is for ("" is a tenant like any other).
	// Within a queue and a priority, claims take tenants in turn,
	// weighted (fair.go, SetTenantWeight), so that one tenant's backlog
	// does not hold back another's tasks. At most MaxTenantName bytes.
	Tenant string `json:"tenant,omitempty"`
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
	// Export, when set, makes the task a plugin call: the module's export
	// of that name is called under the plugin calling convention
	// (docs/plugins.md) with Input as its input, instead of _start; its
	// output is the task's result. At most MaxExportName bytes.
	Export string `json:"export,omitempty"`
	// OnRetry says where a retry after a failure (a counted attempt:
	// failed, trapped, timed out or suspended at its timeout) starts when
	// the task has a stored snapshot (Task.Snapshot; the runner keeps them
	// with snapshots.enabled): OnRetryResume ("resume", and "" the same,
	// the default) resumes the guest from the snapshot, OnRetryRestart
	// ("restart") starts it afresh, the runner dropping the snapshot. An
	// attempt after a drain or a lost runner resumes either way: the task
	// did not fail. Spec.Validate refuses any other value.
	OnRetry string `json:"on_retry,omitempty"`
}

// The values of Spec.OnRetry besides "" (which is OnRetryResume).
const (
	// OnRetryResume: a retry after a failure resumes from the task's
	// snapshot when it has one. The default.
	OnRetryResume = "resume"
	// OnRetryRestart: a retry after a failure starts the guest from the
	// beginning; the runner drops the task's snapshot.
	OnRetryRestart = "restart"
)

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
	// MaxExportName caps Spec.Export.
	MaxExportName = 256
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
// valid spec is. A field over MaxCaps (or MaxEnvName, MaxMountPath) is a
// *LimitError. Mounts are not checked against an allow-list here (the
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
	if err := checkCaps(s, MaxCaps, true); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	if s.MaxAttempts < 0 {
		return bad("max_attempts is %d; want 0 (default %d) or more", s.MaxAttempts, DefaultMaxAttempts)
	}
	if len(s.Export) > MaxExportName || strings.ContainsRune(s.Export, 0) || s.Export == "_start" {
		return bad("export %.40q: want the name of a plugin export (not _start), at most %d bytes, no NUL", s.Export, MaxExportName)
	}
	switch s.OnRetry {
	case "", OnRetryResume, OnRetryRestart:
	default:
		return bad("on_retry %.40q: want %q (the default: resume from the task's snapshot) or %q (start afresh)",
			s.OnRetry, OnRetryResume, OnRetryRestart)
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
		{"limits.disk_bytes", l.DiskBytes},
		{"limits.disk_files", l.DiskFiles},
		{"limits.work", l.Work},
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
		if m.Snapshots && !m.Writable {
			return bad("mount %d: snapshots is for a writable mount (a task whose mounts are all read-only is suspended anyway)", i)
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
	if err := CheckTenantName(s.Tenant); err != nil {
		return err
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
