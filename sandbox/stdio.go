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
// context's exit error.
type stdinReader struct {
	ctx    context.Context
	r      io.Reader
	direct bool
}

func newStdinReader(ctx context.Context, r io.Reader) *stdinReader {
	if r == nil {
		r = bytes.NewReader(nil)
	}
	switch r.(type) {
	case *bytes.Reader, *bytes.Buffer, *strings.Reader:
		return &stdinReader{ctx: ctx, r: r, direct: true}
	}
	return &stdinReader{ctx: ctx, r: r}
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
	tmp := make([]byte, len(p)) // the goroutine may outlive this call: never hand it guest memory
	done := make(chan readResult, 1)
	go func() {
		n, err := s.r.Read(tmp)
		done <- readResult{n, err}
	}()
	select {
	case res := <-done:
		copy(p, tmp[:res.n])
		return res.n, res.err
	case <-s.ctx.Done():
		hardExit(s.ctx)
		return 0, nil // unreachable
	}
}
