package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// Queue limits (tasks.Store's SetQueue*): a queue's tasks running at
// once, started per second and their work per period, whatever their
// tenant, across every runner of the store, on top of the tenants'
// limits and of a claim's own maxima; other queues are not held back.

// queuesOf returns the queue of each claimed task.
func queuesOf(cl []tasks.Claimed) []string {
	out := make([]string, len(cl))
	for i, c := range cl {
		out[i] = c.Task.Queue
	}
	return out
}

// queueLimits is QueueLimits, the test failed on an error.
func (e *env) queueLimits() map[string]tasks.SharedLimits {
	e.t.Helper()
	got, err := e.s.QueueLimits(e.ctx)
	require.NoError(e.t, err)
	return got
}

// testQueueMaxRunning: a queue with a limit never has more tasks running
// (claimed or begun) than it, whatever the claims ask and whoever its
// tenants are; other queues' tasks go; a claim's own maximum for the
// queue and a tenant's limit hold too; a slot freed by a completion is
// taken again; and QueueLimits lists the limit with the queue's tasks.
func testQueueMaxRunning(t *testing.T, e *env) {
	require.ErrorIs(t, e.s.SetQueueMaxRunning(e.ctx, "slow", -1), tasks.ErrInvalidSpec)
	require.ErrorIs(t, e.s.SetQueueMaxRunning(e.ctx, "", 1), tasks.ErrInvalidSpec, "a queue has a name")
	require.Empty(t, e.queueLimits())
	require.NoError(t, e.s.SetQueueMaxRunning(e.ctx, "slow", 3))
	e.submitN(3, e.tenantSpec("", "slow"))
	e.submitN(3, e.tenantSpec("a", "slow"))
	e.submitN(4, e.tenantSpec("", "fast"))
	later := e.tenantSpec("", "slow")
	later.RunAt = Start.Add(time.Hour)
	e.submit(later)

	cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "p", Max: 20, Lease: lease, Queues: map[string]int{"slow": 2, "fast": 1}})
	require.NoError(t, err)
	require.ElementsMatch(t, strings.Fields("slow slow fast"), queuesOf(cl), "the claim's own maxima under the queue's")
	all := cl
	cl = e.claim("p", 20)
	require.ElementsMatch(t, strings.Fields("slow fast fast fast"), queuesOf(cl), "slow's limit, whatever the tenant; fast free")
	all = append(all, cl...)
	require.Empty(t, e.claim("p", 20), "slow runs its most")
	var slow []tasks.Claimed
	for _, c := range all {
		if c.Task.Queue == "slow" {
			slow = append(slow, c)
		}
	}
	require.NoError(t, e.s.MarkBegun(e.ctx, []tasks.Lease{slow[0].Lease}))
	require.Equal(t, map[string]tasks.SharedLimits{"slow": {MaxRunning: 3, Running: 1, Claimed: 2, Queued: 3, Scheduled: 1}},
		e.queueLimits(), "the other queues have no limit")
	th := tasks.TaskThrottle(e.readyIn("slow"), nil, e.queueLimits(), e.clock.Now())
	require.NotNil(t, th)
	require.Equal(t, "its queue runs its most tasks at once (3)", th.Reason)

	require.NoError(t, e.complete(tasks.Completion{Lease: slow[0].Lease, State: tasks.StateSucceeded}))
	require.Equal(t, []string{"slow"}, queuesOf(e.claim("p", 20)), "one slot freed, one task")

	require.NoError(t, e.s.SetQueueMaxRunning(e.ctx, "slow", 0), "0: no limit")
	require.Empty(t, e.queueLimits(), "a queue back to the defaults is forgotten")
	require.Equal(t, []string{"slow", "slow"}, queuesOf(e.claim("p", 20)), "the rest of slow's ready tasks")

	// A task starts only within its tenant's limit and its queue's.
	require.NoError(t, e.s.SetQueueMaxRunning(e.ctx, "both", 3))
	require.NoError(t, e.s.SetTenantMaxRunning(e.ctx, "b", 1))
	e.submitN(3, e.tenantSpec("b", "both"))
	e.submitN(3, e.tenantSpec("c", "both"))
	require.ElementsMatch(t, strings.Fields("b c c"), tenantsOf(e.claim("p", 20)))
}

// readyIn returns a ready task of queue.
func (e *env) readyIn(queue string) tasks.Task {
	e.t.Helper()
	for _, t := range e.all(tasks.ListFilter{Queue: queue, State: tasks.StateQueued}) {
		if !t.RunAt.After(e.clock.Now()) {
			return t
		}
	}
	e.t.Fatalf("no ready task in queue %s", queue)
	return tasks.Task{}
}

// testQueueMaxRunningConcurrent: pools claiming at once, each from the
// limited queue and a queue of its own, never have more of the limited
// queue's tasks running than its limit (counted from what they hold,
// which the store's count is at least), and run every task.
func testQueueMaxRunningConcurrent(t *testing.T, e *env) {
	const limit, n = 3, 60
	require.NoError(t, e.s.SetQueueMaxRunning(e.ctx, "capped", limit))
	for i := range n {
		q := "capped"
		if i%2 == 1 {
			q = fmt.Sprint("own", i%3)
		}
		e.submit(e.tenantSpec([]string{"", "t1", "t2"}[i%3], q))
	}
	most, err := e.mostHeldAtOnce(n, 0, func(p int) map[string]int { return map[string]int{"capped": 4, fmt.Sprint("own", p): 4} },
		func(t tasks.Task) bool { return t.Queue == "capped" })
	require.NoError(t, err)
	require.LessOrEqual(t, most, limit, "the capped queue's tasks held at once")
	require.Positive(t, most)
}

// testQueueRate: a queue with a rate starts at most its bucket's tokens,
// whatever the tenant: a full bucket (max(1, rate)) at once, then rate a
// second as the clock moves, never more than the bucket holds however
// long it waited; other queues are not held back.
func testQueueRate(t *testing.T, e *env) {
	setRate := func(rate float64) error { return e.s.SetQueueRate(e.ctx, "r", rate) }
	setRateOf2(t, setRate)
	e.submitN(4, e.tenantSpec("", "r"))
	e.submitN(4, e.tenantSpec("a", "r"))
	e.submitN(2, e.tenantSpec("", "other"))
	require.ElementsMatch(t, strings.Fields("r r other other"), queuesOf(e.claim("p", 20)), "a full bucket: 2")
	require.Empty(t, e.claim("p", 20), "the bucket is empty")
	got := e.queueLimits()["r"]
	require.Equal(t, 2.0, got.Rate)
	require.Zero(t, got.Tokens)
	require.Equal(t, 6, got.Queued)
	e.refillBucket(t, setRate)
}

// testQueueRateConcurrent: pools claiming at once from a queue with a
// rate, the clock still, start exactly its bucket's tokens in all.
func testQueueRateConcurrent(t *testing.T, e *env) {
	require.NoError(t, e.s.SetQueueRate(e.ctx, "r", 5))
	e.submitN(30, e.tenantSpec("", "r"))
	require.Equal(t, 5, e.claimAtOnce(3, func(int) map[string]int { return map[string]int{"r": 2} }))
}

// claimAtOnce has pools claim at once, pool p from queues(p), until a
// claim takes nothing, and returns how many they claimed in all.
func (e *env) claimAtOnce(pools int, queues func(p int) map[string]int) int {
	e.t.Helper()
	var mu sync.Mutex
	total := 0
	errc := make(chan error, pools)
	start := make(chan struct{})
	for p := range pools {
		go func() {
			errc <- func() error {
				<-start
				for {
					cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: fmt.Sprint("pool-", p), Max: 2, Lease: time.Minute,
						Queues: queues(p)})
					if err != nil || len(cl) == 0 {
						return err
					}
					mu.Lock()
					total += len(cl)
					mu.Unlock()
				}
			}()
		}()
	}
	close(start)
	for range pools {
		require.NoError(e.t, <-errc)
	}
	return total
}

// testQueueWorkQuota: a queue whose attempts recorded in a period did its
// quota of work units is throttled, whatever the tenant: a claim takes
// none of its tasks (other queues' go) until the next period, when it is
// claimed again; its tasks wait queued, never failed; the queue lists
// what it used and until when it waits, and a task of it says why.
func testQueueWorkQuota(t *testing.T, e *env) {
	require.ErrorIs(t, e.s.SetQueueWorkQuota(e.ctx, "q", -1, time.Hour), tasks.ErrInvalidSpec)
	require.ErrorIs(t, e.s.SetQueueWorkQuota(e.ctx, "q", 10, time.Millisecond), tasks.ErrInvalidSpec)
	require.NoError(t, e.s.SetQueueWorkQuota(e.ctx, "q", 1000, time.Hour))
	e.submitN(2, e.tenantSpec("", "q"))
	e.submitN(2, e.tenantSpec("a", "q"))
	e.submitN(3, e.tenantSpec("", "other"))
	run := func(queue string, work int64) {
		t.Helper()
		cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "p", Max: 1, Lease: lease, Queues: map[string]int{queue: 1}})
		require.NoError(t, err)
		require.Len(t, cl, 1, "queue %s", queue)
		require.NoError(t, e.complete(tasks.Completion{Lease: cl[0].Lease, State: tasks.StateSucceeded,
			Attempt: tasks.Attempt{Outcome: "succeeded", Work: work}}))
	}
	run("q", 600)
	run("other", 5000) // not charged to q
	run("q", 600)      // q has used 1,200 of 1,000 this hour
	now := e.clock.Now()
	next := now.Truncate(time.Hour).Add(time.Hour)
	require.Equal(t, map[string]tasks.SharedLimits{"q": {WorkQuota: 1000, WorkPeriod: time.Hour, WorkUsed: 1200,
		ThrottledUntil: next, Queued: 2}}, e.queueLimits())
	cl := e.claim("p", 10)
	require.Equal(t, []string{"other", "other"}, queuesOf(cl), "q waits for its next period")
	require.Len(t, e.all(tasks.ListFilter{Queue: "q", State: tasks.StateQueued}), 2, "throttled, not failed")
	th := tasks.TaskThrottle(e.readyIn("q"), nil, e.queueLimits(), now)
	require.NotNil(t, th)
	require.Equal(t, next, th.Until)
	require.Contains(t, th.Reason, "its queue used its work quota")
	for _, c := range cl {
		require.NoError(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded}))
	}

	e.clock.Advance(next.Sub(now))
	got := e.queueLimits()["q"]
	require.Zero(t, got.WorkUsed, "a new period")
	require.True(t, got.ThrottledUntil.IsZero())
	run("q", 10)
	require.NoError(t, e.s.SetQueueWorkQuota(e.ctx, "q", 0, 0))
	require.Empty(t, e.queueLimits(), "no quota: the defaults, forgotten")
	require.Equal(t, []string{"q"}, queuesOf(e.claim("p", 10)), "the last of q")
}
