package tasks

import "fmt"

// Caps bounds the sizes of a spec's variable-length fields: what a store
// keeps with every task, copies into every claim and every list, and what
// a worker turns into the guest's argv and environment. Labels and export
// have fixed caps of their own (MaxLabels, MaxExportName), the input its
// policy (Policy.MaxInput).
type Caps struct {
	// Args caps the number of Spec.Args; ArgsBytes their bytes in all.
	Args, ArgsBytes int64
	// Env caps the number of variables in Spec.Env; EnvBytes their bytes
	// in all, each counted as its NAME=value string.
	Env, EnvBytes int64
	// Queue caps the length of Spec.Queue, in bytes.
	Queue int64
	// IdempotencyKey caps the length of Spec.IdempotencyKey, in bytes.
	IdempotencyKey int64
	// Mounts caps the number of Spec.Mounts.
	Mounts int64
}

// MaxCaps are the caps Spec.Validate enforces, the same in every store:
// no runner takes more, and a zero Policy.Caps field means this one. They
// are far above what a real task needs (argv and environment of a few
// KiB, a queue name or key of a few dozen bytes, a handful of mounts) and
// keep a task's row small: the queue name and idempotency key are
// indexed, and PostgreSQL refuses a B-tree index row over about 2.7 KB
// (SQLite would take any length; the stores must agree).
var MaxCaps = Caps{
	Args: 1024, ArgsBytes: 256 << 10,
	Env: 1024, EnvBytes: 256 << 10,
	Queue:          128,
	IdempotencyKey: 256,
	Mounts:         64,
}

// Fixed caps of Spec.Validate, not configurable.
const (
	// MaxEnvName caps the length of an environment variable's name.
	MaxEnvName = 1024
	// MaxMountPath caps the length of a mount's host_path and
	// guest_path (Linux's PATH_MAX).
	MaxMountPath = 4096
)

// LimitError is a spec refused because a field is over a cap (Caps, or a
// fixed one such as MaxEnvName). Spec.Validate and CheckSpec return it
// wrapped with ErrInvalidSpec; the API answers it with 413.
type LimitError struct {
	// Field is what is too large: "args", "env", "queue", ...
	Field string
	// Got is the field's size, Max the cap, in Unit ("entries", "bytes").
	Got, Max int64
	Unit     string
	// Limit names the cap: a configuration key of the runner
	// ("limits.max_args") or, for a fixed cap, its constant.
	Limit string
	// Ceiling: Max is MaxCaps' (or a fixed cap), the most any runner
	// takes, not a runner's own lower policy.
	Ceiling bool
}

// Error names the field, its size, the cap and the limit.
func (e *LimitError) Error() string {
	n := func(v int64) string {
		if e.Unit == "bytes" {
			return formatBytes(v)
		}
		return fmt.Sprintf("%d %s", v, e.Unit)
	}
	if e.Ceiling {
		return fmt.Sprintf("%s: %s, over %s, the most any runner takes (%s)", e.Field, n(e.Got), n(e.Max), e.Limit)
	}
	return fmt.Sprintf("%s: %s, over this runner's %s of %s", e.Field, n(e.Got), e.Limit, n(e.Max))
}

// withDefaults returns c with every zero field, and every field over
// MaxCaps, set to MaxCaps'.
func (c Caps) withDefaults() Caps {
	f := func(v *int64, max int64) {
		if *v <= 0 || *v > max {
			*v = max
		}
	}
	m := MaxCaps
	f(&c.Args, m.Args)
	f(&c.ArgsBytes, m.ArgsBytes)
	f(&c.Env, m.Env)
	f(&c.EnvBytes, m.EnvBytes)
	f(&c.Queue, m.Queue)
	f(&c.IdempotencyKey, m.IdempotencyKey)
	f(&c.Mounts, m.Mounts)
	return c
}

// checkCaps returns a *LimitError for the first field of s over c (whose
// fields are all set), or nil. Counts are tested before sizes, so a huge
// list is refused before it is walked.
func checkCaps(s Spec, c Caps, ceiling bool) error {
	over := func(field string, got, max int64, unit, limit string) error {
		if got <= max {
			return nil
		}
		return &LimitError{Field: field, Got: got, Max: max, Unit: unit, Limit: limit, Ceiling: ceiling}
	}
	if err := over("args", int64(len(s.Args)), c.Args, "entries", "limits.max_args"); err != nil {
		return err
	}
	var n int64
	for _, a := range s.Args {
		n += int64(len(a))
	}
	if err := over("args", n, c.ArgsBytes, "bytes", "limits.max_args_bytes"); err != nil {
		return err
	}
	if err := over("env", int64(len(s.Env)), c.Env, "entries", "limits.max_env"); err != nil {
		return err
	}
	n = 0
	for k, v := range s.Env {
		if len(k) > MaxEnvName {
			return &LimitError{Field: fmt.Sprintf("env name %.40q", k), Got: int64(len(k)), Max: MaxEnvName, Unit: "bytes",
				Limit: "tasks.MaxEnvName", Ceiling: true}
		}
		n += int64(len(k) + 1 + len(v))
	}
	if err := over("env", n, c.EnvBytes, "bytes", "limits.max_env_bytes"); err != nil {
		return err
	}
	if err := over("queue", int64(len(s.Queue)), c.Queue, "bytes", "limits.max_queue"); err != nil {
		return err
	}
	if err := over("idempotency_key", int64(len(s.IdempotencyKey)), c.IdempotencyKey, "bytes", "limits.max_idempotency_key"); err != nil {
		return err
	}
	if err := over("mounts", int64(len(s.Mounts)), c.Mounts, "entries", "limits.max_mounts"); err != nil {
		return err
	}
	for i, m := range s.Mounts {
		if l := max(len(m.HostPath), len(m.GuestPath)); l > MaxMountPath {
			return &LimitError{Field: fmt.Sprintf("mount %d: path", i), Got: int64(l), Max: MaxMountPath, Unit: "bytes",
				Limit: "tasks.MaxMountPath", Ceiling: true}
		}
	}
	return nil
}
