package sqlite

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClaimPlans checks that the claim and reap statements walk an index
// in claim order instead of sorting the whole queue.
func TestClaimPlans(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "stint.db"), Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })

	plan := func(q string, args ...any) string {
		t.Helper()
		rows, err := s.wc.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
		require.NoError(t, err)
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var id, parent, notused int
			var detail string
			require.NoError(t, rows.Scan(&id, &parent, &notused, &detail))
			b.WriteString(detail + "\n")
		}
		require.NoError(t, rows.Err())
		return b.String()
	}
	all := plan(sqlClaimAll, "o", 0, 0, 64)
	require.Contains(t, all, "tasks_ready", all)
	require.NotContains(t, all, "B-TREE FOR ORDER BY", all)
	queues := plan(claimQueuesSQL(2), "o", 0, 0, 64, "a", 10, "b", 10)
	require.Contains(t, queues, "tasks_ready_queue", queues)
	require.Equal(t, 1, strings.Count(queues, "B-TREE FOR ORDER BY"), "only the merge of at most Max rows sorts:\n%s", queues)
	require.Contains(t, plan(sqlReapTasks, 0, 3, "why"), "tasks_leases")
	require.Contains(t, plan(sqlReapAttempts, 0, 3, "why"), "tasks_leases")
	require.Contains(t, plan(sqlEarliestLease), "tasks_leases")
}
