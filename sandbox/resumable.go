package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/stint-run/stint/sandbox/internal/resume"
)

// Suspend and resume (Config.Resumable): the host's side of
// sandbox/internal/resume's protocol. A resumable module's guest is asked
// to suspend by the interrupt function (suspendAsked), saves its frames
// through push, and its run ends KindSuspended with a Snapshot
// (takeSnapshot); a run given one restores it (restoreSnapshot) and the
// guest's frames read it back through pop.

// instantiateResumeModule instantiates the host module of push and pop.
func instantiateResumeModule(ctx context.Context, r wazero.Runtime) error {
	_, err := r.NewHostModuleBuilder(resume.ImportModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(framePush), []api.ValueType{api.ValueTypeI64}, nil).Export(resume.PushFunc).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(framePop), nil, []api.ValueType{api.ValueTypeI64}).Export(resume.PopFunc).
		Instantiate(ctx)
	return err
}

// framePush keeps one value of a frame the guest saves as it unwinds.
func framePush(ctx context.Context, _ api.Module, stack []uint64) {
	st := stateOf(ctx)
	if st == nil {
		panic(fmt.Errorf("sandbox: a resumable guest unwound outside a run"))
	}
	st.frames = append(st.frames, stack[0])
}

// framePop gives back the value saved last, as the guest rewinds. An
// empty list (a snapshot that does not match the code) ends the guest.
func framePop(ctx context.Context, _ api.Module, stack []uint64) {
	st := stateOf(ctx)
	if st == nil || len(st.frames) == 0 {
		panic(fmt.Errorf("%w: its frames ran out while the guest rewound (a damaged snapshot)", ErrSnapshotMismatch))
	}
	stack[0] = st.frames[len(st.frames)-1]
	st.frames = st.frames[:len(st.frames)-1]
}

// mountsSuspendable reports whether a run with mounts can be suspended:
// when none is writable (a write after its snapshot would not be rolled
// back when the guest resumes from it, and would be made twice) but those
// that accept it (Mount.Snapshots), and then only at a point where the
// guest holds no file open under them (filesClosed: open files are not in
// a snapshot).
func mountsSuspendable(mounts []Mount) bool {
	for _, m := range mounts {
		if m.Writable && !m.Snapshots {
			return false
		}
	}
	return true
}

// filesClosed reports whether the guest holds no file open under its
// mounts (a snapshot holds no open file; the mounts' preopens are made
// again when it resumes).
func (st *runState) filesClosed() bool { return st.mounts.GuestOpenFiles() == 0 }

// suspendAsked is called by the interrupt function: once the caller asked
// the run to suspend (Spec.Suspend) or its deadline's soft stop came (for
// a caller that takes suspensions), or a background snapshot is due
// (Spec.SnapshotEvery), it asks the guest to unwind, unless the guest is
// still rewinding or already unwinding (it asks again at the next
// interrupt). A suspension asked while a snapshot is due wins.
func suspendAsked(st *runState, mod api.Module) {
	if st.pointSet {
		return
	}
	select {
	case <-st.suspendCh:
		st.snapshotDue = false
	default:
		now := monoNow()
		switch {
		case st.suspendCh != nil && st.softAt != 0 && now >= st.softAt:
			// The deadline's soft stop: a caller that takes suspensions
			// gets one here rather than a guest timed out (Outcome.Deadline).
			st.snapshotDue, st.suspendAtDeadline = false, true
		case st.snapPoints > 0:
			if st.pointsSeen++; st.pointsSeen < st.snapPoints {
				return
			}
			st.snapshotDue = true
		case st.snapEvery <= 0 || now < st.nextSnap:
			return
		default:
			st.snapshotDue = true
		}
	}
	if st.suspendAfter > 0 {
		st.suspendAfter--
		return
	}
	if !st.filesClosed() || mod.ExportedGlobal(resume.ExportRewinding).Get() != 0 || mod.ExportedGlobal(resume.ExportUnwinding).Get() != 0 {
		return
	}
	mod.ExportedGlobal(resume.ExportPoint).(api.MutableGlobal).Set(1)
	st.pointSet = true
}

// sleep is the guest's nanosleep (poll_oneoff's clock subscriptions). A
// call made again as the guest rewinds, after it was suspended asleep,
// sleeps what was left (sleepPending). It sleeps ns nanoseconds, or until
// the run's hard context ends (the guest is ended), or, where the guest
// can unwind in it (unwindsInHostCall), until untilAsked says it is to
// unwind: the sleep then keeps what is left of it, sets the guest
// unwinding and returns, and the guest leaves at once.
func (st *runState) sleep(ns int64) {
	if st.sleepPending {
		ns, st.sleepPending = st.sleepLeft, false
	}
	if ns <= 0 {
		return
	}
	if !st.unwindsInHostCall() {
		sleepUntilDone(st.hard, ns)
		return
	}
	end := monoNow() + ns
	wake := time.NewTimer(time.Duration(ns))
	defer wake.Stop()
	if _, asked := untilAsked(st, wake.C); !asked {
		return
	}
	st.sleepLeft, st.sleepPending = max(0, end-monoNow()), true
	st.unwindInHostCall()
}

// waitStdin waits for a read of a stdin that blocks (stdinReader.wait)
// to end, and returns what it gave, or, where the guest can unwind in its
// fd_read (unwindsInHostCall) and this read is the first of the call
// (after a read that filled its buffer, wazero's fd_read may be reading
// the call's next buffer, and the bytes it gave the first would be lost),
// until untilAsked says it is to unwind: it then sets the guest unwinding
// and returns false; the read goes on waiting for the call made again.
func (st *runState) waitStdin(done <-chan readResult) (readResult, bool) {
	if st.stdinFull || !st.unwindsInHostCall() {
		select {
		case res := <-done:
			return res, true
		case <-st.hard.Done():
			hardExit(st.hard)
		}
	}
	res, asked := untilAsked(st, done)
	if asked {
		st.unwindInHostCall()
		st.unwoundInRead = true
	}
	return res, !asked
}

// unwindsInHostCall reports whether a blocking host call (a point of the
// resume transform: blockingImports) may make the guest unwind now: it can
// suspend (its module's blocking calls are points and st.inst is set), it
// was not asked to already, it holds no file open under its mounts, and it
// is not rewinding (a call made as the guest rewinds is never a point:
// resume's hostSite makes it once the rewind has arrived). The test knob
// suspendAfter counts such a call as an interrupt passed.
func (st *runState) unwindsInHostCall() bool {
	if !st.resumable || st.inst == nil || st.pointSet || !st.filesClosed() || st.inst.ExportedGlobal(resume.ExportRewinding).Get() != 0 {
		return false
	}
	if st.suspendAfter > 0 && st.suspendCh != nil {
		st.suspendAfter--
		return false
	}
	return true
}

// unwindInHostCall sets the guest unwinding from inside a blocking host
// call: it leaves as soon as the call returns.
func (st *runState) unwindInHostCall() {
	st.inst.ExportedGlobal(resume.ExportUnwinding).(api.MutableGlobal).Set(1)
	st.inst.ExportedGlobal(resume.ExportPoint).(api.MutableGlobal).Set(0)
	st.pointSet = true
}

// untilAsked waits for ready, or until the run's hard context ends (the
// guest is ended), or until a guest in a blocking host call is to unwind:
// asked to suspend, its deadline's soft stop for a caller that takes
// suspensions, or a background snapshot due (then it returns true).
func untilAsked[T any](st *runState, ready <-chan T) (T, bool) {
	var zero T
	select {
	case <-st.suspendCh: // asked already: even the shortest wait is a point
		st.snapshotDue = false
		return zero, true
	default:
	}
	now := monoNow()
	soft, stopSoft := timerAt(st.suspendCh != nil && st.softAt != 0, st.softAt, now)
	defer stopSoft()
	snap, stopSnap := timerAt(st.snapEvery > 0, st.nextSnap, now)
	defer stopSnap()
	select {
	case v := <-ready:
		return v, false
	case <-st.hard.Done():
		hardExit(st.hard)
	case <-st.suspendCh:
		st.snapshotDue = false
	case <-soft:
		st.snapshotDue, st.suspendAtDeadline = false, true
	case <-snap:
		st.snapshotDue = true
		select {
		case <-st.suspendCh: // a suspension asked while a snapshot is due wins
			st.snapshotDue = false
		default:
		}
	}
	return zero, true
}

// timerAt is a channel that fires at monoNow's at (now is monoNow()),
// and its timer's stop; when !on, one that never fires.
func timerAt(on bool, at, now int64) (<-chan time.Time, func() bool) {
	if !on {
		return nil, func() bool { return false }
	}
	t := time.NewTimer(time.Duration(max(0, at-now)))
	return t.C, t.Stop
}

// snapshotInPlace hands a background snapshot of inst's guest, which has
// unwound for it, to the caller (Spec.OnSnapshot), and sets the guest
// rewinding in the same instance: its memory and globals are where they
// were, only its frames go back, and the next call of its export goes on
// where it stopped.
func snapshotInPlace(inst api.Module, mod *Module, st *runState, spec *Spec, started time.Time) {
	snap := takeSnapshot(inst, mod, st, spec)
	snap.WorkUnits, snap.RunTime = st.work.units(), time.Since(started)
	if prior := spec.Resume; prior != nil {
		snap.WorkUnits += prior.WorkUnits
		snap.RunTime += prior.RunTime
	}
	st.frames = append(st.frames[:0], snap.frames...)
	inst.ExportedGlobal(resume.ExportUnwinding).(api.MutableGlobal).Set(0)
	inst.ExportedGlobal(resume.ExportRewinding).(api.MutableGlobal).Set(1)
	inst.ExportedGlobal(resume.ExportPoint).(api.MutableGlobal).Set(1)
	st.pointSet, st.snapshotDue = false, false
	st.nextSnap, st.pointsSeen = monoNow()+int64(st.snapEvery), 0
	spec.OnSnapshot(snap)
}

// rewindEnded checks, once a resumed guest's export has returned, that
// its rewind reached the point the snapshot left it at, with every frame
// read back: a guest that returns still rewinding, or with frames left,
// was given a damaged snapshot, and the run is a trap wrapping
// ErrSnapshotMismatch rather than a success of code that never ran.
func rewindEnded(inst api.Module, st *runState) error {
	if inst.ExportedGlobal(resume.ExportRewinding).Get() == 0 && (len(st.frames) == 0 || unwound(inst)) {
		return nil
	}
	return fmt.Errorf("%w: the guest returned before it was back where the snapshot left it (a damaged snapshot)", ErrSnapshotMismatch)
}

// skipStdin reads, before a resumed guest starts, the n bytes of its
// stdin it had read. It runs outside the guest: the reader's exit on a
// hard context that ended meanwhile (a timeout under load) is returned as
// the run's setup error, not a panic out of Run.
func skipStdin(r io.Reader, n int64) (err error) {
	defer func() {
		if p := recover(); p != nil {
			exit, ok := p.(*sys.ExitError)
			if !ok {
				panic(p)
			}
			err = exit
		}
	}()
	if _, err := io.CopyN(io.Discard, r, n); err != nil && err != io.EOF {
		return err
	}
	return nil
}

// unwound reports whether the guest of inst left by unwinding.
func unwound(inst api.Module) bool {
	g := inst.ExportedGlobal(resume.ExportUnwinding)
	return g != nil && g.Get() != 0
}

// restoreSnapshot gives inst the memory and globals of s, and st its
// frames, and sets the guest rewinding. The snapshot was checked
// (Snapshot.check): nothing here fails half way but a memory over the
// run's limit, which ends the run before the guest starts.
func restoreSnapshot(inst api.Module, mod *Module, st *runState, s *Snapshot) error {
	mem := inst.Memory()
	if mem == nil {
		if s.pages != 0 {
			return fmt.Errorf("%w: the module has no memory", ErrSnapshotMismatch)
		}
	} else {
		if have := mem.Size() / PageSize; have < s.pages {
			if _, ok := mem.Grow(s.pages - have); !ok {
				return fmt.Errorf("the snapshot's memory (%d pages) is over the run's memory limit", s.pages)
			}
		} else if have > s.pages {
			return fmt.Errorf("%w: the module starts with %d pages, more than the snapshot's %d", ErrSnapshotMismatch, have, s.pages)
		}
		for p := range s.pages {
			at := p * PageSize
			if b, ok := s.memory[p]; ok {
				mem.Write(at, b)
			} else if cur, _ := mem.Read(at, PageSize); !allZero(cur) {
				mem.Write(at, zeroPage[:])
			}
		}
	}
	for i, name := range mod.resumeGlobals {
		inst.ExportedGlobal(name).(api.MutableGlobal).Set(s.globals[i])
	}
	st.frames = append(st.frames[:0], s.frames...)
	inst.ExportedGlobal(resume.ExportRewinding).(api.MutableGlobal).Set(1)
	inst.ExportedGlobal(resume.ExportPoint).(api.MutableGlobal).Set(1)
	return nil
}

// takeSnapshot is the snapshot of inst's guest, which has unwound.
func takeSnapshot(inst api.Module, mod *Module, st *runState, spec *Spec) *Snapshot {
	s := &Snapshot{Module: mod.SHA256, versions: currentVersions(), memory: map[uint32][]byte{},
		frames: st.frames, identity: snapshotIdentity(spec.Name, spec.Args, spec.Env, spec.Mounts)}
	st.frames = nil
	if mem := inst.Memory(); mem != nil {
		s.pages = mem.Size() / PageSize
		all, _ := mem.Read(0, mem.Size())
		for p := range s.pages {
			page := all[p*PageSize : (p+1)*PageSize]
			if !allZero(page) {
				s.memory[p] = bytes.Clone(page)
			}
		}
	}
	for _, name := range mod.resumeGlobals {
		s.globals = append(s.globals, inst.ExportedGlobal(name).Get())
	}
	s.stdout, s.stderr = bytes.Clone(st.stdout.buf.Bytes()), bytes.Clone(st.stderr.buf.Bytes())
	s.stdoutBytes, s.stderrBytes = st.stdout.total, st.stderr.total
	s.stdinRead = st.stdinRead
	s.clock = st.guestClock()
	s.sleepLeft = -1
	if st.sleepPending {
		s.sleepLeft = st.sleepLeft
	}
	s.reading, st.unwoundInRead = st.unwoundInRead, false
	return s
}

var zeroPage [PageSize]byte

// allZero reports whether a page holds only zeros.
func allZero(page []byte) bool { return bytes.Equal(page, zeroPage[:]) }
