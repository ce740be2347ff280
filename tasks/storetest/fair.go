package storetest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// Fair claims (tasks/fair.go): tenants in turn within a queue and a
// priority, weighted, with no head start banked by a tenant that waited,
// on top of queue maxima, pauses, priorities and run-at.

// tenantSpec is a task of tenant in queue q ("": the default queue).
func (e *env) tenantSpec(tenant, q string) tasks.Spec {
	return tasks.Spec{Module: e.module, Tenant: tenant, Queue: q}
}

// claimTenants claims one task at a time n times and returns the
// tenant of each ("-" for the empty tenant).
func (e *env) claimTenants(n int, queues map[string]int) []string {
	e.t.Helper()
	var out []string
	for range n {
		cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "p", Max: 1, Lease: lease, Queues: queues})
		require.NoError(e.t, err)
		require.Len(e.t, cl, 1)
		out = append(out, cmpTenant(cl[0].Task.Tenant))
	}
	return out
}

func cmpTenant(t string) string {
	if t == "" {
		return "-"
	}
	return t
}

func tenantsOf(cl []tasks.Claimed) []string {
	out := make([]string, len(cl))
	for i, c := range cl {
		out[i] = cmpTenant(c.Task.Tenant)
	}
	return out
}

// testFairTurns: a tenant's backlog does not hold back the others: with
// 10 tasks of a, 3 of b and 2 of the empty tenant submitted in that order,
// claims take them in turn; one claim of many takes the same order.
func testFairTurns(t *testing.T, e *env) {
	for _, q := range []string{"one", "many"} {
		a := e.submitN(10, e.tenantSpec("a", q))
		e.submitN(3, e.tenantSpec("b", q))
		e.submitN(2, e.tenantSpec("", q))
		require.Equal(t, "a", a[0].Tenant, "the tenant is stored")
		require.Equal(t, "a", e.get(a[0].ID).Tenant)
	}
	want := strings.Fields("a b - a b - a b a a a a a a a")
	require.Equal(t, want, e.claimTenants(15, map[string]int{"one": 1}))
	cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "p", Max: 15, Lease: lease, Queues: map[string]int{"many": 15}})
	require.NoError(t, err)
	require.Equal(t, want, tenantsOf(cl), "one claim of many: the same turns, in claim order")
	for _, c := range cl {
		require.Equal(t, tasks.StateRunning, c.Task.State)
	}
}

// testFairWeights: a tenant of weight 3 gets three turns for another's one.
func testFairWeights(t *testing.T, e *env) {
	require.NoError(t, e.s.SetTenantWeight(e.ctx, "big", 3))
	require.ErrorIs(t, e.s.SetTenantWeight(e.ctx, "x", 0), tasks.ErrInvalidSpec)
	require.ErrorIs(t, e.s.SetTenantWeight(e.ctx, "x", tasks.MaxTenantWeight+1), tasks.ErrInvalidSpec)
	w := e.tenantSettings()
	require.Equal(t, map[string]tasks.Tenant{"big": {Weight: 3}}, w)

	e.submitN(12, e.tenantSpec("big", ""))
	e.submitN(12, e.tenantSpec("small", ""))
	require.Equal(t, strings.Fields("big small big big big small big big"), e.claimTenants(8, nil))

	require.NoError(t, e.s.SetTenantWeight(e.ctx, "big", 1), "weight 1 forgets the setting")
	w = e.tenantSettings()
	require.Empty(t, w)
}

// testFairNoBankedTurns: a tenant that had nothing queued while another
// ran alone takes turns with it when it comes, not a run of its own.
func testFairNoBankedTurns(t *testing.T, e *env) {
	e.submitN(5, e.tenantSpec("solo", ""))
	require.Equal(t, strings.Fields("solo solo solo solo solo"), e.claimTenants(5, nil))
	e.submitN(5, e.tenantSpec("solo", ""))
	e.submitN(3, e.tenantSpec("late", ""))
	require.Equal(t, strings.Fields("late solo late solo late solo solo solo"), e.claimTenants(8, nil))
}

// testFairWithinRules: fairness works within priorities, run-at, queue
// maxima and pauses, not across them.
func testFairWithinRules(t *testing.T, e *env) {
	e.submitN(3, e.tenantSpec("a", "q1"))
	high := e.tenantSpec("b", "q1")
	high.Priority = 5
	e.submitN(2, high)
	later := e.tenantSpec("c", "q1")
	later.RunAt = Start.Add(10 * time.Second) // within the claims' leases
	e.submitN(2, later)
	e.submitN(2, e.tenantSpec("a", "q2"))
	require.Equal(t, strings.Fields("b b a a a"), e.claimTenants(5, map[string]int{"q1": 1}),
		"priority first; c's tasks are not ready")

	require.NoError(t, e.s.PauseQueue(e.ctx, "q2"))
	require.Empty(t, e.claim("p", 10), "q1 holds only tasks not ready, q2 is paused")
	e.clock.Advance(10 * time.Second)
	cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "p", Max: 10, Lease: lease, Queues: map[string]int{"q1": 1, "q2": 5}})
	require.NoError(t, err)
	require.Equal(t, []string{"c"}, tenantsOf(cl), "the queue's maximum holds, the paused queue is left")
	require.NoError(t, e.s.ResumeQueue(e.ctx, "q2"))
	require.Equal(t, strings.Fields("a a c"), tenantsOf(e.claim("p", 10)))
}

// testTenantName: a tenant's name is checked like the spec's other fields.
func testTenantName(t *testing.T, e *env) {
	for _, bad := range []string{"tab\there", strings.Repeat("t", tasks.MaxTenantName+1), "\xff"} {
		_, _, err := e.s.Submit(e.ctx, e.tenantSpec(bad, ""))
		require.ErrorIs(t, err, tasks.ErrInvalidSpec, "%q", bad)
	}
	require.ErrorIs(t, e.s.SetTenantWeight(e.ctx, "a\nb", 2), tasks.ErrInvalidSpec)
}

// testFairBound: the fairness bound, checked on random workloads against
// the claims' order alone: while a tenant X has tasks ready, between two
// of its claims (and before its first), another tenant Y is claimed at
// most floor(wY/wX)+1 times. Tenants of random weights submit random
// backlogs, some after claims have begun; claims take 1 to 4 tasks.
func testFairBound(t *testing.T, e *env) {
	rng := rand.New(rand.NewPCG(uint64(len(t.Name())), 42))
	for round := range 6 {
		q := fmt.Sprintf("bound-%d", round)
		names := []string{"", "a", "b", "c", "d"}[:2+rng.IntN(4)]
		weights := map[string]int{}
		for _, n := range names {
			weights[n] = 1 + rng.IntN(4)
			require.NoError(t, e.s.SetTenantWeight(e.ctx, n, weights[n]))
		}
		ready := map[string]int{}
		submit := func(n string, k int) {
			e.submitN(k, e.tenantSpec(n, q))
			ready[n] += k
		}
		late := map[string]int{} // tenants that join once this many claims were made
		for _, n := range names {
			if rng.IntN(3) == 0 {
				late[n] = 1 + rng.IntN(20)
			} else {
				submit(n, 1+rng.IntN(30))
			}
		}
		since := map[[2]string]int{} // claims of Y since X's last claim, while X was ready
		claimed := 0
		for {
			for n, at := range late {
				if claimed >= at {
					submit(n, 1+rng.IntN(30))
					delete(late, n)
				}
			}
			cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "p", Max: 1 + rng.IntN(4), Lease: lease, Queues: map[string]int{q: 100}})
			require.NoError(t, err)
			if len(cl) == 0 && len(late) == 0 {
				break
			}
			for _, c := range cl {
				y := c.Task.Tenant
				claimed++
				ready[y]--
				for _, x := range names {
					if x == y {
						since[[2]string{x, y}] = 0
						for _, z := range names {
							since[[2]string{x, z}] = 0
						}
						continue
					}
					if ready[x] <= 0 {
						continue
					}
					k := [2]string{x, y}
					since[k]++
					require.LessOrEqual(t, since[k], weights[y]/weights[x]+1,
						"round %d: tenant %q (weight %d) claimed %d times while %q (weight %d) waited; weights %v",
						round, y, weights[y], since[k], x, weights[x], weights)
				}
			}
		}
		for _, n := range names {
			require.Zero(t, ready[n], "every task claimed")
			require.NoError(t, e.s.SetTenantWeight(e.ctx, n, 1))
		}
	}
}

// testTenantMaxRunning: a tenant with a limit never has more tasks
// running than it, whatever the claims ask and whichever queue its tasks
// are in; its other tasks wait while other tenants' go; a slot freed by a
// completion is taken again; the empty tenant may be limited too, with no
// task naming a tenant; and the limit is listed with the tasks running.
func testTenantMaxRunning(t *testing.T, e *env) {
	require.NoError(t, e.s.SetTenantMaxRunning(e.ctx, "a", 2))
	require.ErrorIs(t, e.s.SetTenantMaxRunning(e.ctx, "a", -1), tasks.ErrInvalidSpec)
	e.submitN(3, e.tenantSpec("a", "q1"))
	e.submitN(3, e.tenantSpec("a", "q2"))
	e.submitN(3, e.tenantSpec("b", "q1"))
	cl := e.claim("p", 20)
	require.ElementsMatch(t, strings.Fields("a a b b b"), tenantsOf(cl), "a's limit across queues, b unlimited")
	for _, c := range cl {
		if c.Task.Tenant == "a" {
			require.NoError(t, e.s.MarkBegun(e.ctx, []tasks.Lease{c.Lease}))
			break
		}
	}
	require.Empty(t, e.claim("p", 20), "a runs its most: one begun, one claimed")
	got := e.tenantSettings()
	require.Equal(t, map[string]tasks.Tenant{"a": {Weight: 1, SharedLimits: tasks.SharedLimits{MaxRunning: 2, Running: 1, Claimed: 1}}}, got)

	for _, c := range cl {
		if c.Task.Tenant == "a" {
			require.NoError(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded}))
			break
		}
	}
	require.Equal(t, []string{"a"}, tenantsOf(e.claim("p", 20)), "one slot freed, one task")
	require.NoError(t, e.s.SetTenantMaxRunning(e.ctx, "a", 0), "0: no limit")
	require.Len(t, e.claim("p", 20), 3)
	got = e.tenantSettings()
	require.Empty(t, got, "a row back to the defaults is forgotten")

	// The empty tenant, with no task naming a tenant.
	require.NoError(t, e.s.SetTenantMaxRunning(e.ctx, "", 1))
	e.submitN(3, e.tenantSpec("", "plain"))
	require.Len(t, e.claim("p", 20), 1)
	require.Empty(t, e.claim("p", 20))
}

// testTenantMaxRunningConcurrent: pools claiming at once, each claim
// taking what it may, never have more of a limited tenant's tasks running
// than its limit (counted from what they hold, which the store's count is
// at least), and run every task.
func testTenantMaxRunningConcurrent(t *testing.T, e *env) {
	const limit, n = 3, 60
	require.NoError(t, e.s.SetTenantMaxRunning(e.ctx, "capped", limit))
	for i := range n { // each pool claims its own queue: only the limit orders them
		e.submit(e.tenantSpec([]string{"capped", "free"}[i%2], fmt.Sprint("q", i%3)))
	}
	most, err := e.mostHeldAtOnce(n, n/3, func(p int) map[string]int { return map[string]int{fmt.Sprint("q", p): 4} },
		func(t tasks.Task) bool { return t.Tenant == "capped" })
	require.NoError(t, err)
	require.LessOrEqual(t, most, limit, "the capped tenant's tasks held at once")
	require.Positive(t, most)
}

// testTenantWorkQuota: a tenant whose attempts recorded in a period did
// its quota of work units is throttled: a claim takes none of its tasks
// (others' go) until the next period, when it is claimed again; the
// tenant lists what it used and until when it waits.
func testTenantWorkQuota(t *testing.T, e *env) {
	require.ErrorIs(t, e.s.SetTenantWorkQuota(e.ctx, "a", -1, time.Hour), tasks.ErrInvalidSpec)
	require.ErrorIs(t, e.s.SetTenantWorkQuota(e.ctx, "a", 10, time.Millisecond), tasks.ErrInvalidSpec)
	require.NoError(t, e.s.SetTenantWorkQuota(e.ctx, "a", 1000, time.Hour))
	as := e.submitN(3, e.tenantSpec("a", ""))
	e.submitN(2, e.tenantSpec("b", ""))
	run := func(tenant string, work int64) {
		t.Helper()
		cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "p", Max: 1, Lease: lease, Queues: map[string]int{tasks.DefaultQueue: 1}})
		require.NoError(t, err)
		require.Len(t, cl, 1)
		require.Equal(t, tenant, cl[0].Task.Tenant)
		require.NoError(t, e.complete(tasks.Completion{Lease: cl[0].Lease, State: tasks.StateSucceeded,
			Attempt: tasks.Attempt{Outcome: "succeeded", Work: work}}))
	}
	run("a", 600) // a, b in turn
	run("b", 5000)
	run("a", 600) // a has used 1,200 of 1,000 this hour
	got := e.tenantSettings()
	now := e.clock.Now()
	next := now.Truncate(time.Hour).Add(time.Hour)
	require.Equal(t, map[string]tasks.Tenant{"a": {Weight: 1, SharedLimits: tasks.SharedLimits{WorkQuota: 1000, WorkPeriod: time.Hour, WorkUsed: 1200,
		ThrottledUntil: next}}}, got)
	run("b", 0)
	require.Empty(t, e.claim("p", 10), "a waits for its next period")
	require.Equal(t, tasks.StateQueued, e.get(as[2].ID).State, "throttled, not failed")

	e.clock.Advance(next.Sub(now))
	got = e.tenantSettings()
	require.Zero(t, got["a"].WorkUsed, "a new period")
	require.True(t, got["a"].ThrottledUntil.IsZero())
	run("a", 10)
	require.NoError(t, e.s.SetTenantWorkQuota(e.ctx, "a", 0, 0))
	got = e.tenantSettings()
	require.Empty(t, got, "no quota: the defaults, forgotten")
}

// testTenantRate: a tenant with a rate starts at most its bucket's
// tokens: a full bucket (max(1, rate)) at once, then rate a second as the
// clock moves, never more than the bucket holds however long it waited.
func testTenantRate(t *testing.T, e *env) {
	setRate := func(rate float64) error { return e.s.SetTenantRate(e.ctx, "a", rate) }
	setRateOf2(t, setRate)
	e.submitN(8, e.tenantSpec("a", ""))
	e.submitN(2, e.tenantSpec("b", ""))
	require.ElementsMatch(t, strings.Fields("a a b b"), tenantsOf(e.claim("p", 20)), "a full bucket: 2")
	require.Empty(t, e.claim("p", 20), "the bucket is empty")
	got := e.tenantSettings()
	require.Equal(t, 2.0, got["a"].Rate)
	require.Zero(t, got["a"].Tokens)
	e.refillBucket(t, setRate)
}

// setRateOf2 checks that setRate refuses a negative, NaN or infinite
// rate, then sets a rate of 2 a second.
func setRateOf2(t *testing.T, setRate func(float64) error) {
	t.Helper()
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		require.ErrorIs(t, setRate(bad), tasks.ErrInvalidSpec, "%v", bad)
	}
	require.NoError(t, setRate(2))
}

// refillBucket checks a rate of 2 a second whose bucket claims just
// emptied, with tasks behind it: half a second lets one more start, ten
// seconds no more than the bucket's two, and no rate (setRate(0)) the
// last three.
func (e *env) refillBucket(t *testing.T, setRate func(float64) error) {
	t.Helper()
	e.clock.Advance(500 * time.Millisecond)
	require.Len(t, e.claim("p", 20), 1, "half a second at 2 a second")
	e.clock.Advance(10 * time.Second)
	require.Len(t, e.claim("p", 20), 2, "at most the bucket's size, however long it waited")
	require.NoError(t, setRate(0))
	require.Len(t, e.claim("p", 20), 3, "no rate: the rest")
}

// testTenantRateConcurrent: pools claiming at once, each from a queue of
// its own, the tasks of one tenant with a rate, the clock still, start
// exactly its bucket's tokens in all: the tenant's bucket is shared
// across queues.
func testTenantRateConcurrent(t *testing.T, e *env) {
	require.NoError(t, e.s.SetTenantRate(e.ctx, "a", 5))
	for p := range 3 {
		e.submitN(10, e.tenantSpec("a", fmt.Sprint("q", p)))
	}
	require.Equal(t, 5, e.claimAtOnce(3, func(p int) map[string]int { return map[string]int{fmt.Sprint("q", p): 2} }))
}

// tenantSettings is Tenants without the tenants that have tasks and no
// setting, and without the queued counts: what the settings tests check
// (testTenantCounts checks the counts).
func (e *env) tenantSettings() map[string]tasks.Tenant {
	e.t.Helper()
	got, err := e.s.Tenants(e.ctx)
	require.NoError(e.t, err)
	for name, t := range got {
		t.Queued, t.Scheduled = 0, 0
		if (t == tasks.Tenant{Weight: 1, SharedLimits: tasks.SharedLimits{Running: t.Running, Claimed: t.Claimed}}) {
			delete(got, name)
			continue
		}
		got[name] = t
	}
	return got
}

// testTenantCounts: Tenants lists every tenant with a task queued or
// running, a setting or not, with its tasks running, ready now and
// scheduled for later; the empty tenant only when it has a setting.
func testTenantCounts(t *testing.T, e *env) {
	later := e.tenantSpec("a", "")
	later.RunAt = Start.Add(time.Hour)
	e.submitN(3, e.tenantSpec("a", ""))
	e.submitN(2, later)
	e.submitN(1, e.tenantSpec("b", ""))
	e.submitN(4, e.tenantSpec("", ""))
	require.Len(t, e.claim("p", 2), 2)
	got, err := e.s.Tenants(e.ctx)
	require.NoError(t, err)
	claimed := got["a"].Claimed + got["b"].Claimed
	require.Equal(t, 2, claimed+got[""].Claimed, "two claimed, none begun")
	require.Equal(t, map[string]tasks.Tenant{
		"a": {Weight: 1, SharedLimits: tasks.SharedLimits{Claimed: got["a"].Claimed, Queued: 3 - got["a"].Claimed, Scheduled: 2}},
		"b": {Weight: 1, SharedLimits: tasks.SharedLimits{Claimed: got["b"].Claimed, Queued: 1 - got["b"].Claimed}},
	}, got, "the empty tenant, with no setting, is the queue's")
	require.NoError(t, e.s.SetTenantWeight(e.ctx, "", 2))
	got, err = e.s.Tenants(e.ctx)
	require.NoError(t, err)
	require.Equal(t, 2, got[""].Weight)
	require.Equal(t, 2-claimed, got[""].Claimed, "the empty tenant's claimed tasks, once it has a setting")
	e.clock.Advance(time.Hour)
	got, err = e.s.Tenants(e.ctx)
	require.NoError(t, err)
	require.Equal(t, 5-got["a"].Claimed, got["a"].Queued, "the scheduled ones are ready")
	require.Zero(t, got["a"].Scheduled)
}

// mostHeldAtOnce has three pools claim (pool p from queues(p)) and
// complete the n tasks submitted, each pool until all are done or it has
// done share of them (when share > 0: a pool that claims only its own
// queue), and returns the most tasks that counted (held) were held at
// once, each counted until its completion starts.
func (e *env) mostHeldAtOnce(n, share int, queues func(p int) map[string]int, held func(tasks.Task) bool) (int, error) {
	var mu sync.Mutex
	now, most, done := 0, 0, 0
	poolDone := make([]int, 3)
	errc := make(chan error, 3)
	for p := range 3 {
		go func() {
			errc <- func() error {
				for range 100 * n {
					mu.Lock()
					finished := done == n || share > 0 && poolDone[p] == share
					mu.Unlock()
					if finished {
						return nil
					}
					cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: fmt.Sprint("pool-", p), Max: 4, Lease: time.Minute,
						Queues: queues(p)})
					if err != nil {
						return err
					}
					mu.Lock()
					for _, c := range cl {
						if held(c.Task) {
							now++
							most = max(most, now)
						}
					}
					mu.Unlock()
					for _, c := range cl {
						mu.Lock()
						if held(c.Task) {
							now-- // before the completion frees its slot
						}
						done++
						poolDone[p]++
						mu.Unlock()
						if err := e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded}); err != nil {
							return err
						}
					}
				}
				return fmt.Errorf("no progress")
			}()
		}()
	}
	var err error
	for range 3 {
		err = errors.Join(err, <-errc)
	}
	if err == nil && done != n {
		err = fmt.Errorf("%d of %d tasks done", done, n)
	}
	return most, err
}
