package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/batch"
	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/tasks"
)

// A --joblog reopened by a rerun gets a line for each input done in an
// earlier run that it does not account for: a success without a success
// line, a failure without any line (issue 41, item 12); the lines it has
// are not written again, and a last line cut short is cut off.
func TestJobLogWritesEarlierInputsWithoutALine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "joblog")
	res := func(seq int, name string) batch.Result {
		return batch.Result{Input: "/in/" + name, Name: name, Seq: seq, TaskID: int64(seq)}
	}
	first, err := openJobLog(path, "up.wasm")
	require.NoError(t, err)
	start := time.Unix(1_700_000_000, 0)
	at := &tasks.Attempt{Outcome: "succeeded", StartedAt: start, EndedAt: start.Add(time.Second)}
	ok := res(1, "a.txt")
	ok.Attempt, ok.OutputBytes = at, 5
	first.add(ok)
	stopped := res(2, "b.txt")
	stopped.Attempt, stopped.Stopped, stopped.Signal = &tasks.Attempt{Outcome: "interrupted", ExitCode: 75, StartedAt: start, EndedAt: start}, true, 15
	first.add(stopped)
	failed := res(4, "d.txt")
	failed.Attempt, failed.Failure = &tasks.Attempt{Outcome: "output_limit", StartedAt: start, EndedAt: start}, &batch.Failure{Outcome: "output_limit"}
	first.add(failed)
	require.NoError(t, first.close())
	// A write cut short by a kill.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("5\t:\t1700000000.000\t")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	l, err := openJobLog(path, "up.wasm")
	require.NoError(t, err)
	before := string(testutil.ReadFile(t, path))
	require.True(t, strings.HasSuffix(before, "up.wasm < /in/d.txt\n"), "the cut line is cut off: %q", before)
	done := func(r batch.Result) batch.Result { r.AlreadyDone = true; return r }
	skipped := func(r batch.Result) batch.Result {
		r.SkippedFailed, r.Failure = true, &batch.Failure{Outcome: "dead"}
		return r
	}
	require.False(t, l.missing(done(res(1, "a.txt"))), "a success line")
	require.True(t, l.missing(done(res(2, "b.txt"))), "only a line of its stop")
	require.True(t, l.missing(done(res(3, "c.txt"))), "no line")
	require.False(t, l.missing(skipped(res(4, "d.txt"))), "its failure's line")
	require.True(t, l.missing(skipped(res(5, "e.txt"))), "only a cut line")
	require.True(t, l.missing(done(res(9, "a.txt"))), "another Seq: parallel --resume goes by Seq")
	for _, r := range []batch.Result{done(res(1, "a.txt")), done(res(2, "b.txt")), done(res(3, "c.txt")),
		skipped(res(4, "d.txt")), skipped(res(5, "e.txt"))} {
		if r.Seq == 3 {
			r.Attempt, r.OutputBytes = at, 7
		}
		if r.Seq == 5 {
			r.Attempt = &tasks.Attempt{Outcome: "memory_limit", StartedAt: start, EndedAt: start.Add(2 * time.Second)}
		}
		l.add(r)
	}
	require.NoError(t, l.close())
	added := strings.TrimPrefix(string(testutil.ReadFile(t, path)), before)
	require.Equal(t, "2\t:\t0.000\t     0.000\t0\t0\t0\t0\tup.wasm < /in/b.txt\n"+
		"3\t:\t1700000000.000\t     1.000\t0\t7\t0\t0\tup.wasm < /in/c.txt\n"+
		"5\t:\t1700000000.000\t     2.000\t0\t0\t14\t0\tup.wasm < /in/e.txt\n", added)
}
