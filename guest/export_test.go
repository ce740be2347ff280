//go:build !wasip1

package guest

import (
	"sync"
	"testing"
	"unsafe"
)

// Fake is a scriptable in-memory stint host for the tests of this package. Set
// its exported fields before calling the SDK; read what the SDK did through
// its methods. It implements the raw ABI, pointers included, like a sandbox
// would: a nil pointer with a non-zero length panics, as a bad pointer traps
// in a real sandbox.
type Fake struct {
	mu sync.Mutex

	Stop       int32  // stop_requested result
	Checkpoint []byte // the checkpoint the attempt started with; nil means none
	SaveCode   int32  // checkpoint_save result
	DeadlineMs int64  // deadline_ms result

	// SizeOverride and LoadOverride, when set, replace the results of
	// checkpoint_size and checkpoint_load (to play a misbehaving host).
	SizeOverride *int32
	LoadOverride *int32

	saves     [][]byte
	saveNil   []bool
	loadLens  []uint32
	progresss [][2]int64
}

// UseFake installs f as the host until the end of the test.
func UseFake(tb testing.TB, f *Fake) {
	tb.Helper()
	host.Store(&hostABI{
		stopRequested: func() int32 {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.Stop
		},
		checkpointSave: f.save,
		checkpointSize: func() int32 {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.SizeOverride != nil {
				return *f.SizeOverride
			}
			if f.Checkpoint == nil {
				return -1
			}
			return int32(len(f.Checkpoint))
		},
		checkpointLoad: f.load,
		progress: func(done, total int64) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.progresss = append(f.progresss, [2]int64{done, total})
		},
		deadlineMs: func() int64 {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.DeadlineMs
		},
	})
	tb.Cleanup(func() { host.Store(standalone) })
}

func (f *Fake) save(ptr unsafe.Pointer, n uint32) int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ptr == nil && n > 0 {
		panic("fake stint host: checkpoint_save: nil pointer with non-zero length")
	}
	var b []byte
	if n > 0 {
		b = append([]byte{}, unsafe.Slice((*byte)(ptr), n)...)
	} else {
		b = []byte{}
	}
	f.saves = append(f.saves, b)
	f.saveNil = append(f.saveNil, ptr == nil)
	return f.SaveCode
}

func (f *Fake) load(ptr unsafe.Pointer, n uint32) int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loadLens = append(f.loadLens, n)
	if ptr == nil && n > 0 {
		panic("fake stint host: checkpoint_load: nil pointer with non-zero length")
	}
	copied := int32(-1)
	if f.Checkpoint != nil {
		copied = int32(copy(unsafe.Slice((*byte)(ptr), n), f.Checkpoint))
	}
	if f.LoadOverride != nil {
		return *f.LoadOverride
	}
	return copied
}

// Saves returns the blobs passed to checkpoint_save, in order.
func (f *Fake) Saves() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.saves...)
}

// SaveNilPointers reports, for each checkpoint_save call, whether its pointer was 0.
func (f *Fake) SaveNilPointers() []bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]bool(nil), f.saveNil...)
}

// LoadLens returns the lengths passed to checkpoint_load, in order.
func (f *Fake) LoadLens() []uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]uint32(nil), f.loadLens...)
}

// ProgressReports returns the (done, total) pairs passed to progress, in order.
func (f *Fake) ProgressReports() [][2]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][2]int64(nil), f.progresss...)
}
