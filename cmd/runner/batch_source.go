package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/stint-run/stint/tasks"
)

// A batch keeps its inputs out of the store: each task's key is derived
// from its input's path and sha256 (the batch keeps both in memory), and
// its attempt reads the file when it starts. An input
// changed between submit and run is refused (errInputChanged), never run:
// its output would not be that of the content its task is keyed by.

// errInputChanged: the file of an input no longer has the content its task
// was submitted with.
var errInputChanged = errors.New("the input file changed since the batch read it")

// hashInput reads an input through sha256, up to limits.max_input (it
// was checked before, but the file may have grown since), with buf as its
// buffer (one per caller: reading many small files, a buffer each would
// be most of the work).
func hashInput(path string, max int64, buf []byte) ([32]byte, error) {
	var sum [32]byte
	f, err := openRead(path)
	if err != nil {
		return sum, err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	limit := int64(math.MaxInt64)
	if max > 0 {
		limit = max + 1
	}
	// A LimitReader, not the file: io.CopyBuffer would hand the file its
	// own WriteTo, which allocates a buffer of its own.
	n, err := io.CopyBuffer(h, io.LimitReader(f, limit), buf)
	if err != nil {
		return sum, fmt.Errorf("reading the input: %w", err)
	}
	if max > 0 && n > max {
		return sum, fmt.Errorf("reading the input: more than %s (limits.max_input)", formatSize(max))
	}
	h.Sum(sum[:0])
	return sum, nil
}

// inputFor is the pool's Config.Input in a batch: an attempt's stdin is
// its input file, read now and checked against the sha256 its task was
// submitted with. While the batch submits, a task not known yet waits
// for its chunk to be adopted (waitInput). A task of the batch's queue
// that is none of its inputs (one an earlier run left running, whose file
// changed or went since) gets an error: it ends dead instead of running.
func (b *batchRun) inputFor(ctx context.Context, t tasks.Task) ([]byte, error) {
	in := b.waitInput(ctx, t.ID)
	if in == nil {
		return nil, fmt.Errorf("task %d is none of this batch's inputs now: its file was changed or removed since it was submitted", t.ID)
	}
	data, err := readInput(in.path, b.a.cfg.Policy.MaxInput)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in.path, err)
	}
	if sha256.Sum256(data) != in.sha {
		return nil, fmt.Errorf("%s: %w (its task is keyed by the content it had then); run the batch again to process the new content", in.path, errInputChanged)
	}
	return data, nil
}
