package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/teststore"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/tasks"
)

// TestTermLines: each line is escaped as termSafe does, the line breaks
// kept.
func TestTermLines(t *testing.T) {
	t.Parallel()
	require.Equal(t, "a\\x1b[1m\nb\\r\n\\u202ec", termLines("a\x1b[1m\nb\r\n\u202ec"))
}

// TestTasksShowEscapes: what a submitter or a guest controls (queue name,
// labels, the attempt's reason, its stderr) reaches the terminal escaped
// in tasks show, tasks list and tasks counts; JSON output is JSON.
func TestTasksShowEscapes(t *testing.T) {
	t.Parallel()
	dir := testwasm.DataDir(t)
	s := teststore.Open(t, dir)
	const queueName = "q\x1b[2J"
	id := teststore.Queue(t, s, fixture(t, "noop"), tasks.Spec{Queue: queueName, Labels: map[string]string{"l": "v\x1b]0;title\x07"}})
	endAttemptStderr(t, s, id, tasks.StateDead, "failed", "exit code 1 \x1b[31mred", "first\n\x1b[1A\x1b[2Ksecond\r\u202etxt\n")
	require.NoError(t, s.Close())

	out := tasksShow(t, dir, id)
	require.NotContains(t, out, "\x1b")
	require.NotContains(t, out, "\r")
	require.NotContains(t, out, "\u202e")
	require.Contains(t, out, `q\x1b[2J`)
	require.Contains(t, out, `l=v\x1b]0;title\x07`)
	require.Contains(t, out, `exit code 1 \x1b[31mred`)
	require.Contains(t, out, "  first\n  \\x1b[1A\\x1b[2Ksecond\\r\\u202etxt\n", "stderr keeps its lines")

	for _, args := range [][]string{{"tasks", "list"}, {"tasks", "stats"}} {
		out, stderr, code := runInProcess(t, append(args, "--data-dir", dir)...)
		require.Equal(t, 0, code, "%v: %s", args, stderr)
		require.NotContains(t, out, "\x1b", "%v", args)
		require.Contains(t, out, `q\x1b[2J`, "%v", args)
	}
	out = tasksShow(t, dir, id, "--json")
	require.Contains(t, out, `q\u001b[2J`, "JSON escapes it its own way")
}

func TestCount(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1 task", count(1, "task"))
	require.Equal(t, "0 tasks", count(0, "task"))
	require.Equal(t, "2 entries", count(2, "entry"))
	require.Equal(t, "1 entry", count(1, "entry"))
}
