//go:build unix

package mountfs

import (
	"io"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"golang.org/x/sys/unix"
)

// The disk budget of an open file (Budget says what counts). Each
// write or truncate is charged before its system call and settled after
// it: what the call did not do is given back. A cost of -1 means the call
// is not counted (no budget).

// size reads the file's size into f.known, the first time it is needed.
func (f *mountFile) size() experimentalsys.Errno {
	if f.known >= 0 {
		return 0
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.fd), &st); err != nil {
		return experimentalsys.UnwrapOSError(err)
	}
	f.known = st.Size
	return 0
}

// chargeWrite charges a write of n bytes at off (-1: at the file's offset,
// or its end for an append) and returns where it writes and its cost.
func (f *mountFile) chargeWrite(off int64, n int) (at, cost int64, errno experimentalsys.Errno) {
	b := f.fs.shared
	if b.maxBytes <= 0 || f.closed {
		return off, -1, 0
	}
	if errno = f.size(); errno != 0 {
		return off, -1, 0 // the write itself reports what is wrong
	}
	at = off
	if at < 0 {
		if f.IsAppend() {
			var st unix.Stat_t
			if err := unix.Fstat(int(f.fd), &st); err != nil {
				return off, -1, 0
			}
			at = st.Size
		} else if at, errno = f.offset(); errno != 0 {
			return off, -1, 0
		}
	}
	hole := max(at-f.known, 0) // bytes between the known end and the write
	if hole > b.maxBytes || int64(n) > b.maxBytes-hole {
		b.refused.Store(true)
		return at, -1, errNoSpace
	}
	cost = hole + int64(n)
	if !b.chargeBytes(cost) {
		return at, -1, errNoSpace
	}
	return at, cost, 0
}

// offset is the file's current offset.
func (f *mountFile) offset() (int64, experimentalsys.Errno) {
	off, err := unix.Seek(int(f.fd), 0, io.SeekCurrent)
	return off, experimentalsys.UnwrapOSError(err)
}

// settle gives back what a write charged cost for want bytes at at did
// not use, having written wrote, and grows the known size.
func (f *mountFile) settle(at, cost int64, want, wrote int) {
	if cost < 0 {
		return
	}
	if wrote <= 0 {
		f.fs.shared.refundBytes(cost)
		return
	}
	f.fs.shared.refundBytes(int64(want - wrote))
	f.known = max(f.known, at+int64(wrote))
}

// chargeTruncate charges growing the file to size.
func (f *mountFile) chargeTruncate(size int64) (cost int64, errno experimentalsys.Errno) {
	b := f.fs.shared
	if b.maxBytes <= 0 || f.closed {
		return -1, 0
	}
	if errno = f.size(); errno != 0 {
		return -1, 0
	}
	cost = max(size-f.known, 0)
	if !b.chargeBytes(cost) {
		return -1, errNoSpace
	}
	return cost, 0
}
