package sandbox

import (
	"context"
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
		WithNanosleep(s.nanosleep)
	return s
}

type (
	slotStdin  struct{ s *ioSlot }
	slotStdout struct{ s *ioSlot }
	slotStderr struct{ s *ioSlot }
)

func (r slotStdin) Read(p []byte) (int, error)   { return r.s.st.stdin.Read(p) }
func (w slotStdout) Write(p []byte) (int, error) { return w.s.st.stdout.Write(p) }
func (w slotStderr) Write(p []byte) (int, error) { return w.s.st.stderr.Write(p) }

func (s *ioSlot) nanosleep(ns int64) { sleepUntilDone(s.st.hard, ns) }

// Compile-time checks that the adapters are what wazero wants.
var (
	_ io.Reader = slotStdin{}
	_ io.Writer = slotStdout{}
	_ io.Writer = slotStderr{}
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
