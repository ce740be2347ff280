package sandbox

import (
	"context"
	"crypto/rand"
	"io"
	"time"

	"github.com/tetratelabs/wazero"
)

// defaultName is argv[0] when Spec.Name is empty.
const defaultName = "task"

// ioSlot wires a run's stdin, stdout, stderr and sleep into wazero. Its
// ModuleConfig is built once, pointing at the slot, and each run points the
// slot at its own runState for its duration; slots are pooled by the
// Runtime, so a task with default arguments costs no ModuleConfig copies
// (each With* copies the whole config). A slot serves one run at a time:
// nothing reaches it after the instance is closed (the abandoned helpers
// of a forced run, a blocked stdin read or checkpoint callback, hold the
// runState, never the slot).
type ioSlot struct {
	cfg wazero.ModuleConfig // the runtime's base + this slot's stdio and sleep, argv ["task"]
	st  *runState
}

func newIOSlot(base wazero.ModuleConfig) *ioSlot {
	s := &ioSlot{}
	s.cfg = base.
		WithArgs(defaultName).
		WithStdin(slotStdin{s}).
		WithStdout(slotStdout{s}).
		WithStderr(slotStderr{s}).
		WithRandSource(slotRand{s}).
		WithNanosleep(s.nanosleep).
		WithNanotime(s.nanotime, 1)
	return s
}

type (
	slotStdin  struct{ s *ioSlot }
	slotStdout struct{ s *ioSlot }
	slotStderr struct{ s *ioSlot }
	slotRand   struct{ s *ioSlot }
)

// randChunk is how much of a random_get slotRand fills between two looks
// at the run's hard context: about 0.2 ms of crypto/rand here.
const randChunk = 16 << 10

// Read fills p from crypto/rand, randChunk at a time, and ends the guest
// once the run's hard context is done: one random_get of 64 MiB took 0.7
// s, and a loop of them outlived a 1 s attempt timeout by 0.8 s in both
// interrupt modes (the host call is one instruction to the checks).
func (r slotRand) Read(p []byte) (int, error) {
	for done := 0; done < len(p); {
		if r.s.st.hard.Err() != nil {
			hardExit(r.s.st.hard)
		}
		n, err := rand.Read(p[done:min(len(p), done+randChunk)])
		if done += n; err != nil {
			return done, err
		}
	}
	return len(p), nil
}

func (r slotStdin) Read(p []byte) (int, error) {
	n, err := r.s.st.stdin.Read(p)
	r.s.st.stdinRead += int64(n)
	r.s.st.stdinFull = n > 0 && n == len(p)
	return n, err
}
func (w slotStdout) Write(p []byte) (int, error) { return w.s.st.stdout.Write(p) }
func (w slotStderr) Write(p []byte) (int, error) { return w.s.st.stderr.Write(p) }

func (s *ioSlot) nanosleep(ns int64) { s.st.sleep(ns) } // resumable.go

// nanotime is the guest's monotonic clock: monoNow's, moved on a resumed
// run so that it goes on from the snapshot's (runState.guestClock).
func (s *ioSlot) nanotime() int64 { return s.st.guestClock() }

// Compile-time checks that the adapters are what wazero wants.
var (
	_ io.Reader = slotStdin{}
	_ io.Writer = slotStdout{}
	_ io.Writer = slotStderr{}
	_ io.Reader = slotRand{}
)

// getSlot returns a slot pointed at st; putSlot gives it back after the
// instance is closed.
func (r *Runtime) getSlot(st *runState) *ioSlot {
	s, _ := r.slots.Get().(*ioSlot)
	if s == nil {
		s = newIOSlot(r.base)
	}
	s.st = st
	return s
}

func (r *Runtime) putSlot(s *ioSlot) {
	s.st = nil
	r.slots.Put(s)
}

// sleepUntilDone sleeps ns nanoseconds or until ctx is done, then ends the
// guest with the context's exit error.
func sleepUntilDone(ctx context.Context, ns int64) {
	if ns <= 0 {
		return
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		hardExit(ctx)
	}
}
