package tasks

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// CheckSpec checks a spec against a runner's policy: every mount must lie
// under a directory of allow (deny by default), and no limit may exceed
// limit (a zero field of limit means no cap). Errors wrap ErrInvalidSpec.
func CheckSpec(s Spec, allow []string, limit Limits) error {
	var errs []error
	for _, m := range s.Mounts {
		host, err := filepath.Abs(m.HostPath)
		if err != nil || !underAny(host, allow) {
			errs = append(errs, fmt.Errorf("mount %s is not under any allowed directory %v (mounts.allow)", m.HostPath, allow))
		}
	}
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
