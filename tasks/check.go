package tasks

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/stint-run/stint/internal/bytesize"
)

// Policy is what a runner lets a task ask for.
type Policy struct {
	// MountsAllow lists the host directories a mount must lie under,
	// symlinks resolved on both sides; without any, no mount is allowed.
	MountsAllow []string
	// Max caps each limit a task may ask for (a zero field: no cap).
	Max Limits
	// MaxInput caps a task's input, in bytes (0: no cap).
	MaxInput int64
	// Caps bounds args, env, queue name, idempotency key and mounts; a
	// zero field (or one over MaxCaps) is MaxCaps', which Spec.Validate
	// enforces in every store anyway.
	Caps Caps
}

// CheckSpec checks a spec against a runner's policy: every mount's host
// directory must exist and lie under a directory of p.MountsAllow once
// symlinks are resolved on both sides (deny by default), no limit may
// exceed p.Max, the input may not exceed p.MaxInput, and no field may be
// over p.Caps (a *LimitError, checked first: such a spec's mounts are not
// resolved). Errors wrap ErrInvalidSpec.
//
// At submission this is a courtesy (an early error): the runner that runs
// the task checks its mounts again, at each attempt, with its own
// allow-list.
func CheckSpec(s Spec, p Policy) error {
	if err := checkCaps(s, p.Caps.withDefaults(), false); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	if err := CheckTenantName(s.Tenant); err != nil {
		return err
	}
	var errs []error
	if _, err := ResolveMounts(s.Mounts, p.MountsAllow); err != nil {
		errs = append(errs, err)
	}
	limit := p.Max
	check := func(name string, v, cap int64, format func(int64) string) {
		if cap > 0 && v > cap {
			errs = append(errs, fmt.Errorf("%s %s is over the runner's maximum %s", name, format(v), format(cap)))
		}
	}
	bytes := formatBytes
	check("memory", s.Limits.MemoryBytes, limit.MemoryBytes, bytes)
	check("timeout", int64(s.Limits.Timeout), int64(limit.Timeout), func(n int64) string { return time.Duration(n).String() })
	check("stdout", s.Limits.Stdout, limit.Stdout, bytes)
	check("stderr", s.Limits.Stderr, limit.Stderr, bytes)
	check("checkpoint", s.Limits.Checkpoint, limit.Checkpoint, bytes)
	check("disk", s.Limits.DiskBytes, limit.DiskBytes, bytes)
	check("disk files", s.Limits.DiskFiles, limit.DiskFiles, func(n int64) string { return fmt.Sprint(n) })
	check("input", int64(len(s.Input)), p.MaxInput, bytes)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	return nil
}

// formatBytes prints n with the largest binary unit that divides it
// exactly (64MiB), or as a number of bytes (1000 bytes).
func formatBytes(n int64) string {
	if s := bytesize.Format(n); s != strconv.FormatInt(n, 10) {
		return s
	}
	return fmt.Sprintf("%d bytes", n)
}
