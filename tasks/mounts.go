package tasks

import (
	"errors"
	"fmt"
	"os"
	"path"

	"github.com/stint-run/stint/internal/hostdir"
)

// GrantedMount is a mount as a runner grants it: its host directory held
// open. The directory was opened once, without following a symlink in any
// component of its resolved path, and the allow-list was checked on that
// descriptor (is it, or is it beneath, an allow-listed directory opened the
// same way: compared by device and inode, not by path; internal/hostdir).
// The sandbox mounts Dir itself and never opens HostPath again, so nothing
// that changes the path after the check (a directory renamed, a symlink
// put in its place by a guest with a writable mount) changes what is
// mounted.
type GrantedMount struct {
	// Mount is the task's mount, HostPath resolved (every symlink
	// followed) as it was when the directory was opened: for messages.
	Mount
	// Dir is the directory. The caller closes it (CloseMounts) once the
	// run is over; the sandbox makes its own descriptors from it.
	Dir *os.File
}

// OpenMounts opens and checks mounts against an allow-list, deny by
// default: each guest path must be absolute; each host path must exist, be
// a directory, and lie under an entry of allow, symlinks resolved on both
// sides, the resolved path opened without following any symlink and
// checked by device and inode (internal/hostdir's Open says how).
//
// It returns the granted mounts, whose directories the caller closes
// (CloseMounts), or an error naming every mount refused (not wrapped in
// ErrInvalidSpec: callers say what it is), with nothing left open.
func OpenMounts(ms []Mount, allow []string) ([]GrantedMount, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	var errs []error
	out := make([]GrantedMount, 0, len(ms))
	for _, m := range ms {
		if !path.IsAbs(m.GuestPath) {
			errs = append(errs, fmt.Errorf("mount %s: guest path %q is not absolute", m.HostPath, m.GuestPath))
			continue
		}
		d, err := hostdir.Open(m.HostPath, allow)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, GrantedMount{Mount: Mount{HostPath: d.Path, GuestPath: m.GuestPath, Writable: m.Writable, Snapshots: m.Snapshots}, Dir: d.File})
	}
	if err := errors.Join(errs...); err != nil {
		_ = CloseMounts(out)
		return nil, err
	}
	return out, nil
}

// CloseMounts closes the directories of granted mounts.
func CloseMounts(ms []GrantedMount) error {
	var errs []error
	for _, m := range ms {
		if m.Dir != nil {
			errs = append(errs, m.Dir.Close())
		}
	}
	return errors.Join(errs...)
}

// ResolveMounts checks mounts against an allow-list as OpenMounts does
// (the same checks, on descriptors) and returns the mounts with their
// resolved host paths, nothing left open, or an error naming every mount
// refused (not wrapped in ErrInvalidSpec: callers say what it is). It is a
// check (CheckSpec at submission): a path it returns may change before it
// is used, so whatever mounts a directory uses OpenMounts' descriptors.
func ResolveMounts(ms []Mount, allow []string) ([]Mount, error) {
	gs, err := OpenMounts(ms, allow)
	if err != nil {
		return nil, err
	}
	out := make([]Mount, len(gs))
	for i, g := range gs {
		out[i] = g.Mount
	}
	if err := CloseMounts(gs); err != nil {
		return nil, err
	}
	return out, nil
}
