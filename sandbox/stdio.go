package sandbox

import (
	"bytes"
	"context"
	"io"
	"strings"

	"github.com/tetratelabs/wazero/sys"
)

// exitCodeOutputLimit is what a capped writer panics with; the run is then
// classified by the writer's flag, not by this code.
const exitCodeOutputLimit = 0xdeadbeef

// cappedWriter keeps up to limit bytes. A write past the limit ends the
// guest at once (KindOutputLimit): output is never silently cut.
type cappedWriter struct {
	buf   bytes.Buffer
	limit int64
	total int64
	over  bool
	tee   io.Writer
	// ctx, with a tee, is the run's hard context: a tee may block (a slow
	// log sink), and a guest whose hard context ended meanwhile ends when
	// it returns. In checks mode nothing else would end it before its next
	// check, and a guest abandoned by the watchdog would write on while
	// its runtime is closed under it (a data race inside wazero).
	ctx context.Context
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	w.total += int64(len(p))
	if w.total > w.limit {
		w.over = true
		panic(sys.NewExitError(exitCodeOutputLimit))
	}
	w.buf.Write(p)
	if w.tee != nil {
		_, _ = w.tee.Write(p)
		if w.ctx != nil && w.ctx.Err() != nil {
			hardExit(w.ctx)
		}
	}
	return len(p), nil
}

// hardExit panics with the exit error wazero gives a cancelled or expired
// context: a blocking point that merely returned would let the call report
// success (docs/shutdown.md).
func hardExit(ctx context.Context) {
	code := sys.ExitCodeContextCanceled
	if ctx.Err() == context.DeadlineExceeded {
		code = sys.ExitCodeDeadlineExceeded
	}
	panic(sys.NewExitError(code))
}

// stdinReader gives the guest its input and ends on the hard context. An
// in-memory input is read directly; any other reader is read from a
// goroutine so that a read that never returns (a pipe nobody writes) cannot
// hold the guest: on the hard context the guest's fd_read ends with the
// context's exit error. With wait (runState.waitStdin) a read that blocks
// can also make the guest unwind, to be suspended in it: Read then
// returns nothing, and the read goes on waiting (pending) for the call
// made again when the guest rewinds.
type stdinReader struct {
	ctx    context.Context
	r      io.Reader
	direct bool
	wait   func(done <-chan readResult) (readResult, bool)
	// pending is the read still waiting, into buf; left is what a read
	// gave that the guest's buffer could not take yet, then leftErr.
	pending chan readResult
	buf     []byte
	left    []byte
	leftErr error
}

func newStdinReader(ctx context.Context, r io.Reader, wait func(<-chan readResult) (readResult, bool)) *stdinReader {
	if r == nil {
		r = bytes.NewReader(nil)
	}
	switch r.(type) {
	case *bytes.Reader, *bytes.Buffer, *strings.Reader:
		return &stdinReader{ctx: ctx, r: r, direct: true}
	}
	return &stdinReader{ctx: ctx, r: r, wait: wait}
}

type readResult struct {
	n   int
	err error
}

func (s *stdinReader) Read(p []byte) (int, error) {
	if s.ctx.Err() != nil {
		hardExit(s.ctx)
	}
	if s.direct {
		return s.r.Read(p)
	}
	if len(s.left) > 0 || s.leftErr != nil {
		n := copy(p, s.left)
		if s.left = s.left[n:]; len(s.left) > 0 {
			return n, nil
		}
		err := s.leftErr
		s.leftErr = nil
		return n, err
	}
	if s.pending == nil {
		// The goroutine may outlive this call: never hand it guest memory.
		buf, done := make([]byte, len(p)), make(chan readResult, 1)
		s.buf, s.pending = buf, done
		go func() {
			n, err := s.r.Read(buf)
			done <- readResult{n, err}
		}()
	}
	var res readResult
	if s.wait != nil {
		var ok bool
		if res, ok = s.wait(s.pending); !ok {
			return 0, nil // the guest unwinds: the read stays pending
		}
	} else {
		select {
		case res = <-s.pending:
		case <-s.ctx.Done():
			hardExit(s.ctx)
		}
	}
	s.pending = nil
	n := copy(p, s.buf[:res.n])
	if n < res.n {
		s.left, s.leftErr = s.buf[n:res.n], res.err
		return n, nil
	}
	return n, res.err
}
