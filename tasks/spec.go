package tasks

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Policy is what a runner lets a task ask for.
type Policy struct {
	// MountsAllow lists the host directories a mount must lie under;
	// without any, no mount is allowed.
	MountsAllow []string
	// Max caps each limit a task may ask for (a zero field: no cap).
	Max Limits
	// MaxInput caps a task's input, in bytes (0: no cap).
	MaxInput int64
}

// CheckSpec checks a spec against a runner's policy: every mount must lie
// under a directory of p.MountsAllow (deny by default), no limit may
// exceed p.Max, and the input may not exceed p.MaxInput. Errors wrap
// ErrInvalidSpec.
func CheckSpec(s Spec, p Policy) error {
	var errs []error
	for _, m := range s.Mounts {
		host, err := filepath.Abs(m.HostPath)
		if err != nil || !underAny(host, p.MountsAllow) {
			errs = append(errs, fmt.Errorf("mount %s is not under any allowed directory %v (mounts.allow)", m.HostPath, p.MountsAllow))
		}
	}
	limit := p.Max
	check := func(name string, v, cap int64, format func(int64) string) {
		if cap > 0 && v > cap {
			errs = append(errs, fmt.Errorf("%s %s is over the runner's maximum %s", name, format(v), format(cap)))
		}
	}
	bytes := func(n int64) string { return fmt.Sprintf("%d bytes", n) }
	check("memory", s.Limits.MemoryBytes, limit.MemoryBytes, bytes)
	check("timeout", int64(s.Limits.Timeout), int64(limit.Timeout), func(n int64) string { return time.Duration(n).String() })
	check("stdout", s.Limits.Stdout, limit.Stdout, bytes)
	check("stderr", s.Limits.Stderr, limit.Stderr, bytes)
	check("checkpoint", s.Limits.Checkpoint, limit.Checkpoint, bytes)
	check("input", int64(len(s.Input)), p.MaxInput, bytes)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	return nil
}

func underAny(path string, dirs []string) bool {
	for _, d := range dirs {
		rel, err := filepath.Rel(d, path)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
