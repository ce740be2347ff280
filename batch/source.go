package batch

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"sync"
	"sync/atomic"

	"github.com/stint-run/stint/internal/bytesize"
	"github.com/stint-run/stint/tasks"
)

// A batch keeps its inputs out of the store: each task's key is derived
// from its input's path and sha256 (the batch keeps both in memory). The
// content read to hash it is held in memory until the task ends, up to
// Config.HoldBytes in all, and its attempts get that content: the
// very bytes its task is keyed by, without reading the file again. An
// input not held (read while the budget was spent) is read again when its
// attempt starts; if it changed since the batch read it,
// it is refused (errInputChanged), never run: its output would not be
// that of the content its task is keyed by.

// errInputChanged: the file of an input no longer has the content its task
// was submitted with.
var errInputChanged = errors.New("the input file changed since the batch read it")

// readForSubmit reads and hashes an input for its task's key, holding its
// content (in.data) while the budget allows: within it the file is read
// whole, else through sha256 with buf as the buffer (one per caller:
// reading many small files, a buffer each would be most of the work).
func (b *batchRun) readForSubmit(in *batchInput, buf []byte) error {
	max := b.maxInput
	if !b.hold.reserve(in.size) {
		sum, mode, err := hashInput(in, max, buf)
		in.sha = sum
		if err == nil {
			in.perm = outputPerm(mode)
		}
		return err
	}
	data, mode, err := readInput(in, max)
	b.hold.adjust(int64(len(data)) - in.size) // the file may have changed size since it was listed
	if err != nil {
		return err
	}
	in.sha, in.data, in.perm = sha256.Sum256(data), data, outputPerm(mode)
	return nil
}

// batchReaders is how many goroutines read and hash a batch's inputs. A
// small file whose pages are not cached costs a wait for the disk, and
// one reader at a time made a first run over 10,000 files take 1.7x as
// long as a run over the same files cached; several reads in flight
// overlap those waits.
const batchReaders = 8

// readChunk is a run of inputs read and hashed (readForSubmit), in the
// order of b.inputs, with their errors.
type readChunk struct {
	inputs []*batchInput
	errs   []error
}

// readAhead reads and hashes b.inputs, n at a time, each chunk on
// batchReaders goroutines, and sends the chunks in order: the next chunk
// is read while the caller stores the last. Once done is closed it stops
// after the chunk it is reading, and closes the channel.
func (b *batchRun) readAhead(n int, done <-chan struct{}) <-chan readChunk {
	out := make(chan readChunk, 1)
	go func() {
		defer close(out)
		bufs := make([][]byte, batchReaders)
		for i := range bufs {
			bufs[i] = make([]byte, 32<<10)
		}
		for start := 0; start < len(b.inputs); start += n {
			select {
			case <-done:
				return
			default:
			}
			c := readChunk{inputs: b.inputs[start:min(start+n, len(b.inputs))]}
			c.errs = make([]error, len(c.inputs))
			var next atomic.Int64
			var wg sync.WaitGroup
			for _, buf := range bufs[:min(len(bufs), len(c.inputs))] {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := int(next.Add(1) - 1); i < len(c.inputs); i = int(next.Add(1) - 1) {
						c.errs[i] = b.readForSubmit(c.inputs[i], buf)
					}
				}()
			}
			wg.Wait()
			select {
			case out <- c:
			case <-done:
				return
			}
		}
	}()
	return out
}

// releaseData lets go of an input's held content once its task ended.
func (b *batchRun) releaseData(in *batchInput) {
	b.mu.Lock()
	data := in.data
	in.data = nil
	b.mu.Unlock()
	if data != nil {
		b.hold.adjust(-int64(len(data)))
	}
}

// heldData is in's held content, nil if none.
func (b *batchRun) heldData(in *batchInput) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return in.data
}

// holdBudget counts the input bytes a batch may still hold (left).
type holdBudget struct {
	mu   sync.Mutex
	left int64
}

// reserve takes n bytes of the budget if that many are left.
func (h *holdBudget) reserve(n int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n > h.left {
		return false
	}
	h.left -= n
	return true
}

// adjust gives back (n < 0) or takes (n > 0) bytes of the budget, which
// may then be overdrawn until they are given back.
func (h *holdBudget) adjust(n int64) {
	h.mu.Lock()
	h.left -= n
	h.mu.Unlock()
}

// hashInput reads an input through sha256, up to limits.max_input (it
// was checked before, but the file may have grown since), with buf as its
// buffer (one per caller: reading many small files, a buffer each would
// be most of the work). It returns the file's mode too.
func hashInput(in *batchInput, max int64, buf []byte) ([32]byte, fs.FileMode, error) {
	var sum [32]byte
	f, size, mode, err := in.dir.openInput(in.name)
	if err != nil {
		return sum, 0, err
	}
	defer func() { _ = f.Close() }()
	if max > 0 && size > max {
		return sum, 0, fmt.Errorf("reading the input: more than %s (limits.max_input)", bytesize.Format(max))
	}
	h := sha256.New()
	limit := int64(math.MaxInt64)
	if max > 0 {
		limit = max + 1
	}
	// A LimitReader, not the file: io.CopyBuffer would hand the file its
	// own WriteTo, which allocates a buffer of its own.
	n, err := io.CopyBuffer(h, io.LimitReader(f, limit), buf)
	if err != nil {
		return sum, 0, fmt.Errorf("reading the input: %w", err)
	}
	if max > 0 && n > max {
		return sum, 0, fmt.Errorf("reading the input: more than %s (limits.max_input)", bytesize.Format(max))
	}
	h.Sum(sum[:0])
	return sum, mode, nil
}

// readInput reads an input whole, up to limits.max_input (it was checked
// before, but the file may have grown since), through its folder's
// descriptor, refusing a link and anything but a regular file
// (inputDir.openInput). It returns the file's mode too.
func readInput(in *batchInput, max int64) ([]byte, fs.FileMode, error) {
	f, size, mode, err := in.dir.openInput(in.name)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = f.Close() }()
	if max > 0 && size > max {
		return nil, 0, fmt.Errorf("reading the input: more than %s (limits.max_input)", bytesize.Format(max))
	}
	b, err := readSized(f, size, max)
	var pe *fs.PathError
	if err != nil && !errors.As(err, &pe) {
		return nil, 0, fmt.Errorf("reading the input: %w (limits.max_input)", err)
	}
	return b, mode, err
}

// readSized reads r, a regular file that fstat said holds size bytes,
// whole and up to max (0: no limit). It asks for one byte more than size,
// so that a read of exactly size bytes, short of what was asked, is the
// end of the file: one read(2) for a small input instead of two (the
// second only to see the end), a system call that costs about 1 µs on
// this project's VM (docs/design/batch.md, "The yardstick, and where a
// batch's time goes"). Any other count
// (the file grew or shrank since fstat) reads on to the end, as
// bytesize.ReadAtMost does.
func readSized(r io.Reader, size, max int64) ([]byte, error) {
	if size <= 0 || max > 0 && size > max {
		return bytesize.ReadAtMost(r, max)
	}
	buf := make([]byte, size+1)
	n, err := r.Read(buf)
	switch {
	case err == io.EOF:
		return []byte{}, nil
	case err != nil:
		return nil, err
	case int64(n) == size:
		return buf[:n], nil
	}
	rest := r
	if max > 0 {
		rest = io.LimitReader(r, max-int64(n)+1)
	}
	more, err := io.ReadAll(rest)
	if err != nil {
		return nil, err
	}
	data := append(buf[:n], more...)
	if max > 0 && int64(len(data)) > max {
		return nil, fmt.Errorf("more than %s", bytesize.Format(max))
	}
	return data, nil
}

// inputFor is the pool's Config.Input in a batch: an attempt's stdin is
// its input's held content, else its file, read now and checked against
// the sha256 its task was submitted with. While the batch submits, a task
// not known yet waits for its chunk to be adopted (waitInput). A task of the batch's queue
// that is none of its inputs (one an earlier run left running, whose file
// changed or went since) gets an error: it ends dead instead of running.
func (b *batchRun) inputFor(ctx context.Context, t tasks.Task) ([]byte, error) {
	in := b.waitInput(ctx, t.ID)
	if in == nil {
		return nil, fmt.Errorf("task %d is none of this batch's inputs now: its file was changed or removed since it was submitted", t.ID)
	}
	if data := b.heldData(in); data != nil {
		return data, nil
	}
	data, _, err := readInput(in, b.maxInput)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in.path, err)
	}
	if sha256.Sum256(data) != in.sha {
		return nil, fmt.Errorf("%s: %w (its task is keyed by the content it had then); run the batch again to process the new content", in.path, errInputChanged)
	}
	return data, nil
}
