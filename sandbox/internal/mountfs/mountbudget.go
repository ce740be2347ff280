package mountfs

import "sync/atomic"

// MaxOpenFiles is how many files a run may hold open at once through all
// its mounts (all the FSs of one Budget).
// Past it, opening another fails with EAGAIN (wazero's errno set has no EMFILE), as EMFILE would for a process
// at its descriptor limit: every open file is a host descriptor, and a
// guest that opens without closing must not starve the runner (its store,
// its listener, the other tasks) of descriptors.
const MaxOpenFiles = 256

// openFiles counts a mount's open files against MaxOpenFiles.
type openFiles struct{ n atomic.Int64 }

// take reserves one descriptor, or reports that the run holds too many.
func (o *openFiles) take() bool {
	if o.n.Add(1) > MaxOpenFiles {
		o.n.Add(-1)
		return false
	}
	return true
}

func (o *openFiles) release() { o.n.Add(-1) }

// Budget is what the mounts of one run share: the descriptors they
// hold open (MaxOpenFiles) and the disk the guest may make them hold
// (sandbox's Limits.MaxDiskBytes, Limits.MaxDiskFiles). Every mount of a
// run points to the same one.
//
// The disk budget counts what the guest asks the disk to hold, never
// gives it back, and is checked before the system call, so that the host
// directories never hold more than the budget of the guest's making:
//
//   - a write of n bytes at offset off (write, pwrite; an append writes at
//     the file's end) costs n, plus off-size when off is past the file's
//     size as the open file knows it (the hole of a sparse file: host
//     tools see, copy and back up its apparent size);
//   - growing a file to size s (fd_filestat_set_size, fd_allocate) costs
//     s-size;
//   - creating a file, directory, symlink or hard link costs one file
//     (maxFiles: inodes, directory entries);
//   - creating a symlink also costs the length of its target in bytes,
//     as a write of it would (the file system stores it, up to 4 KiB).
//
// Rewriting bytes costs them again, and deleting a file gives nothing
// back: the budget bounds what a run writes, which bounds what it can
// leave. A call over the budget fails with EIO, which the guest sees as
// ENOSPC (see TakeRefused), and does nothing; the guest runs on.
type Budget struct {
	files    openFiles
	preopens atomic.Int64 // of those, wazero's opens of a mount's directory for its preopen

	maxBytes, maxFiles int64 // <= 0: no budget
	bytes, created     atomic.Int64

	// refused is set when the budget refuses a call, and read (and
	// cleared) by TakeRefused as the call returns to the guest, to turn
	// the EIO the call reports into ENOSPC.
	refused atomic.Bool
}

// NewBudget returns the budget of a run that may write maxBytes and
// create maxFiles files (either <= 0: no budget of that kind).
func NewBudget(maxBytes, maxFiles int64) *Budget {
	return &Budget{maxBytes: maxBytes, maxFiles: maxFiles}
}

// chargeBytes reserves n bytes of disk, or reports (and records) that the
// run has no room for them.
func (b *Budget) chargeBytes(n int64) bool {
	if b == nil || n <= 0 || b.maxBytes <= 0 {
		return true
	}
	if b.bytes.Add(n) > b.maxBytes || n > b.maxBytes { // n > max also catches an overflowing sum
		b.bytes.Add(-n)
		b.refused.Store(true)
		return false
	}
	return true
}

// refundBytes gives back bytes charged for a call that did not use them.
func (b *Budget) refundBytes(n int64) {
	if b != nil && n > 0 && b.maxBytes > 0 {
		b.bytes.Add(-n)
	}
}

// chargeFile reserves one new file (or directory, symlink, link).
func (b *Budget) chargeFile() bool {
	if b == nil || b.maxFiles <= 0 {
		return true
	}
	if b.created.Add(1) > b.maxFiles {
		b.created.Add(-1)
		b.refused.Store(true)
		return false
	}
	return true
}

// refundFile gives back a file charged for a call that created none.
func (b *Budget) refundFile() {
	if b != nil && b.maxFiles > 0 {
		b.created.Add(-1)
	}
}

// GuestOpenFiles is how many files the guest holds open through the
// mounts: every open file but wazero's of each mount's directory, which
// it opens on first use for the mount's preopen and holds.
func (b *Budget) GuestOpenFiles() int64 {
	if b == nil {
		return 0
	}
	return b.files.n.Load() - b.preopens.Load()
}

// ResetDisk starts a new disk budget (a warm plugin instance's next call);
// open files stay counted.
func (b *Budget) ResetDisk() {
	if b != nil {
		b.bytes.Store(0)
		b.created.Store(0)
		b.refused.Store(false)
	}
}

// TakeRefused reports whether the budget refused a call since the last
// time it was asked: the EIO that call returns is then ENOSPC for the
// guest (sandbox's diskErrnoListener).
func (b *Budget) TakeRefused() bool {
	return b != nil && b.refused.Load() && b.refused.Swap(false)
}
