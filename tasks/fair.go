package tasks

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Fair claims. Within a queue and a priority, a claim takes tenants in
// turn, weighted (stride scheduling): each (queue, tenant) has a pass, a
// virtual time that each of its claimed tasks advances by FairStride
// divided by the tenant's weight, and a claim takes the ready tasks with
// the smallest tags, a tenant's j-th ready task (in priority, RunAt, id
// order) being tagged its pass plus j strides. A tenant with nothing
// queued for a while does not bank a head start: its pass is raised to
// the queue's clock, the largest tag a claim of that queue has taken. So
// a tenant that submits one task while another has 100,000 queued waits
// behind at most one of them per claim; one of weight 2 gets two turns
// for the other's one.
//
// A store claims fairly only while some queued task names a tenant (a
// probe of a partial index that is empty otherwise): with every task in
// the empty tenant, tags would order tasks as priority, RunAt and id do,
// and the claim stays the single ordered range scan it was. Either way a
// tenant's tasks are claimed in the order of the claim without tenants.

// MaxTenantName caps the length of Spec.Tenant, in bytes.
const MaxTenantName = 128

// MaxTenantWeight caps a tenant's weight (Store.SetTenantWeight); the least is 1.
const MaxTenantWeight = 1000

// FairStride is how far one claimed task advances the pass of a tenant
// of weight 1 (of weight w: FairStride / w).
const FairStride = 1 << 20

// CheckTenantName checks a tenant's name: at most MaxTenantName bytes of
// UTF-8 without NUL or control characters ("" is the default tenant).
func CheckTenantName(t string) error {
	if len(t) > MaxTenantName {
		return fmt.Errorf("%w: %w", ErrInvalidSpec, &LimitError{Field: "tenant", Got: int64(len(t)), Max: MaxTenantName,
			Unit: "bytes", Limit: "tasks.MaxTenantName", Ceiling: true})
	}
	if !utf8.ValidString(t) || strings.ContainsFunc(t, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("%w: tenant %.40q: want UTF-8 without control characters", ErrInvalidSpec, t)
	}
	return nil
}

// CheckTenantWeight checks a weight given to SetTenantWeight.
func CheckTenantWeight(w int) error {
	if w < 1 || w > MaxTenantWeight {
		return fmt.Errorf("%w: tenant weight %d: want 1 to %d", ErrInvalidSpec, w, MaxTenantWeight)
	}
	return nil
}

// Tenant is a tenant's settings (Store.Tenants).
type Tenant struct {
	// Weight: its turns in fair claims against a tenant of weight 1.
	Weight int `json:"weight"`
	SharedLimits
}

// SharedLimits are a tenant's or a queue's limits, across every runner
// of the store, and what counts against them now.
type SharedLimits struct {
	// MaxRunning: the most of its tasks running at once (0: no limit).
	MaxRunning int `json:"max_running,omitempty"`
	// Running: its tasks a worker began and that have not ended; Claimed:
	// those claimed that no worker began yet (both count against
	// MaxRunning); Queued: those ready to run now; Scheduled: those queued
	// for later (a run-at, a retry's backoff). A claim reads none of them.
	Running   int `json:"running"`
	Claimed   int `json:"claimed"`
	Queued    int `json:"queued"`
	Scheduled int `json:"scheduled"`
	// WorkQuota: the most work units its attempts may do per WorkPeriod
	// (0: no quota); WorkUsed: what they did in the current period.
	WorkQuota  int64         `json:"work_quota,omitempty"`
	WorkPeriod time.Duration `json:"work_period,omitempty"`
	WorkUsed   int64         `json:"work_used,omitempty"`
	// ThrottledUntil, when set, is when its quota's next period starts:
	// until then a claim takes none of its tasks.
	ThrottledUntil time.Time `json:"throttled_until,omitzero"`
	// Rate: the most of its tasks started per second (0: no limit);
	// Tokens: the starts its bucket holds now (up to max(1, Rate)).
	Rate   float64 `json:"rate,omitempty"`
	Tokens float64 `json:"tokens,omitempty"`
}

// TenantRow is a tenant or a queue (Weight unused) as a store keeps it:
// its settings, the work done in period UsedPeriod (Unix microseconds /
// the period), and its bucket's tokens at TokensAt (zero: full).
type TenantRow struct {
	Weight, MaxRunning int
	WorkQuota          int64
	WorkPeriod         time.Duration
	UsedPeriod, Used   int64
	Rate, Tokens       float64
	TokensAt           time.Time
}

// Tenant is the tenant r describes, as of now (Running is left to the
// caller): its work used in its quota's current period, throttled until
// the next one once that reaches the quota, and its bucket's tokens.
func (r TenantRow) Tenant(now time.Time) Tenant {
	t := Tenant{Weight: r.Weight, SharedLimits: SharedLimits{MaxRunning: r.MaxRunning, WorkQuota: r.WorkQuota, WorkPeriod: r.WorkPeriod}}
	if r.WorkQuota > 0 && r.WorkPeriod > 0 {
		p := r.WorkPeriod.Microseconds()
		current := now.UnixMicro() / p
		if r.UsedPeriod == current {
			t.WorkUsed = r.Used
		}
		if t.WorkUsed >= r.WorkQuota {
			t.ThrottledUntil = time.UnixMicro((current + 1) * p).UTC()
		}
	}
	if r.Rate > 0 {
		t.Rate, t.Tokens = r.Rate, r.tokens(now)
	}
	return t
}

// tokens is what r's bucket holds at now: what it held at TokensAt
// refilled at Rate a second, up to its size, max(1, Rate).
func (r TenantRow) tokens(now time.Time) float64 {
	size := max(1, r.Rate)
	if r.TokensAt.IsZero() {
		return size
	}
	return min(size, max(0, r.Tokens+now.Sub(r.TokensAt).Seconds()*r.Rate))
}

// Slots is how many more of t's tasks a claim may start: limited false
// when t has no limit, no rate and no spent quota.
func (t SharedLimits) Slots() (n int, limited bool) {
	if !t.ThrottledUntil.IsZero() {
		return 0, true
	}
	n = math.MaxInt
	if t.MaxRunning > 0 {
		n, limited = max(0, t.MaxRunning-t.Running-t.Claimed), true
	}
	if t.Rate > 0 {
		n, limited = min(n, int(t.Tokens)), true
	}
	if !limited {
		return 0, false
	}
	return n, true
}

// CheckTenantRate checks a rate given to SetTenantRate or SetQueueRate.
func CheckTenantRate(rate float64) error {
	if !(rate >= 0) || math.IsInf(rate, 0) || rate > 1e6 {
		return fmt.Errorf("%w: rate %v: want 0 (no limit) to 1e6 starts a second", ErrInvalidSpec, rate)
	}
	return nil
}

// CheckTenantWorkQuota checks a quota given to Set{Tenant,Queue}WorkQuota.
func CheckTenantWorkQuota(quota int64, period time.Duration) error {
	if quota < 0 {
		return fmt.Errorf("%w: work quota %d: want 0 (none) or more", ErrInvalidSpec, quota)
	}
	if quota > 0 && period < time.Second {
		return fmt.Errorf("%w: work quota per %v: want a period of at least 1s", ErrInvalidSpec, period)
	}
	return nil
}

// CheckTenantMaxRunning checks a limit given to Set{Tenant,Queue}MaxRunning.
func CheckTenantMaxRunning(n int) error {
	if n < 0 {
		return fmt.Errorf("%w: max_running %d: want 0 (no limit) or more", ErrInvalidSpec, n)
	}
	return nil
}

// FairKey names a tenant's flow in a queue.
type FairKey struct{ Queue, Tenant string }

// FairCandidate is a ready task a fair claim may take. A store reads a
// flow's candidates in claim order (priority highest first, RunAt, id).
type FairCandidate struct {
	ID       int64
	Queue    string
	Tenant   string
	Priority int
	RunAt    time.Time
}

// FairState is what a fair claim reads besides its candidates: each
// flow's pass (absent: 0), each tenant's weight (absent: 1), each queue's
// clock (absent: 0), and how many more tasks each tenant, and each queue,
// with a limit or a spent quota may start (SharedLimits.Slots; absent: no limit).
type FairState struct {
	Passes     map[FairKey]int64
	Weights    map[string]int
	Clocks     map[string]int64
	Slots      map[string]int
	QueueSlots map[string]int
}

// FairPlan is what a fair claim takes and writes back.
type FairPlan struct {
	// IDs are the tasks to claim, in claim order.
	IDs []int64
	// Passes are the new passes of the flows that took a task; Clocks the
	// new clocks of the queues that did; Taken and QueueTaken how many
	// tasks of each tenant and each queue it takes.
	Passes     map[FairKey]int64
	Clocks     map[string]int64
	Taken      map[string]int
	QueueTaken map[string]int
}

// PlanFairClaim chooses, from cands (each flow's in claim order), what a
// claim takes: in each queue the smallest tags first, at most maxima[q]
// (nil: most in every queue), the queues merged by priority, RunAt and id,
// at most most in all, and of a tenant or a queue with slots at most
// those: its other tasks wait, and its pass does not move for them.
func PlanFairClaim(cands []FairCandidate, st FairState, maxima map[string]int, most int) FairPlan {
	type tagged struct {
		FairCandidate
		tag int64
	}
	perQueue := map[string][]tagged{}
	var queues []string
	j := map[FairKey]int64{}
	for _, c := range cands {
		k := FairKey{c.Queue, c.Tenant}
		if _, ok := perQueue[c.Queue]; !ok {
			queues = append(queues, c.Queue)
		}
		pass := max(st.Passes[k], st.Clocks[c.Queue])
		perQueue[c.Queue] = append(perQueue[c.Queue], tagged{c, pass + j[k]*stride(st.Weights[c.Tenant])})
		j[k]++
	}
	slices.Sort(queues)
	heads := make([][]tagged, 0, len(queues))
	left := make([]int, 0, len(queues)) // what each queue may still take
	for _, q := range queues {
		l := perQueue[q]
		slices.SortStableFunc(l, func(a, b tagged) int {
			return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.tag, b.tag),
				a.RunAt.Compare(b.RunAt), cmp.Compare(a.ID, b.ID))
		})
		n := most
		if maxima != nil {
			n = min(n, maxima[q])
		}
		if s, limited := st.QueueSlots[q]; limited {
			n = min(n, s)
		}
		heads, left = append(heads, l), append(left, n)
	}
	slots := maps.Clone(st.Slots)
	plan := FairPlan{Passes: map[FairKey]int64{}, Clocks: map[string]int64{}, Taken: map[string]int{}, QueueTaken: map[string]int{}}
	for len(plan.IDs) < most {
		best := -1
		for i := range heads {
			// A tenant that may start no more waits: its tasks are passed
			// over before the queues are compared, so that what a claim
			// takes, and in which order, does not depend on how many of
			// them it read.
			for len(heads[i]) > 0 {
				if n, limited := slots[heads[i][0].Tenant]; !limited || n > 0 {
					break
				}
				heads[i] = heads[i][1:]
			}
			h := heads[i]
			if len(h) == 0 || left[i] <= 0 {
				continue
			}
			if best < 0 || cmp.Or(cmp.Compare(heads[best][0].Priority, h[0].Priority),
				h[0].RunAt.Compare(heads[best][0].RunAt), cmp.Compare(h[0].ID, heads[best][0].ID)) < 0 {
				best = i
			}
		}
		if best < 0 {
			break
		}
		c := heads[best][0]
		heads[best] = heads[best][1:]
		if n, limited := slots[c.Tenant]; limited {
			slots[c.Tenant] = n - 1
		}
		left[best]--
		plan.IDs = append(plan.IDs, c.ID)
		plan.Taken[c.Tenant]++
		plan.QueueTaken[c.Queue]++
		k := FairKey{c.Queue, c.Tenant}
		plan.Passes[k] = max(plan.Passes[k], c.tag+stride(st.Weights[c.Tenant]))
		plan.Clocks[c.Queue] = max(plan.Clocks[c.Queue], st.Clocks[c.Queue], c.tag)
	}
	return plan
}

// stride is how far one task advances a tenant of weight w (0: 1).
func stride(w int) int64 {
	return FairStride / int64(min(max(w, 1), MaxTenantWeight))
}

// SortClaimed puts a claim's tasks in claim order: that of ids, a fair
// claim's choice, or with ids nil priority (highest first), RunAt, id.
func SortClaimed(out []Claimed, ids []int64) {
	if ids != nil {
		pos := make(map[int64]int, len(ids))
		for i, id := range ids {
			pos[id] = i
		}
		slices.SortFunc(out, func(a, b Claimed) int { return cmp.Compare(pos[a.Task.ID], pos[b.Task.ID]) })
		return
	}
	slices.SortFunc(out, func(a, b Claimed) int {
		return cmp.Or(
			cmp.Compare(b.Task.Priority, a.Task.Priority),
			a.Task.RunAt.Compare(b.Task.RunAt),
			cmp.Compare(a.Task.ID, b.Task.ID))
	})
}

// FairFetch reads the candidates of a fair claim: each flow's first limit
// ready tasks (or fewer when the queue's maximum is lower), in claim order.
type FairFetch func(limit int) ([]FairCandidate, error)

// PlanFairClaimFetching is PlanFairClaim reading few candidates per flow:
// about twice a fair share of most (flows the number of flows) at first,
// and four times more whenever the plan takes every candidate of a flow
// that may have more, since then a later one of that flow might have
// been chosen. A claim of 64 over 100 tenants reads a few hundred
// candidates, not 6,400.
func PlanFairClaimFetching(fetch FairFetch, flows int, st FairState, maxima map[string]int, most int) (FairPlan, error) {
	limit := FairFirstLimit(flows, most)
	for {
		cands, err := fetch(limit)
		if err != nil {
			return FairPlan{}, err
		}
		plan := PlanFairClaim(cands, st, maxima, most)
		if limit >= most || !exhaustsAFlow(cands, plan.IDs, limit, st.Slots) {
			return plan, nil
		}
		limit = min(most, 4*limit)
	}
}

// FairFirstLimit is the first limit PlanFairClaimFetching gives fetch, so
// that a store may read those candidates ahead.
func FairFirstLimit(flows, most int) int {
	return min(most, max(2, 2*most/max(flows, 1)+1))
}

// exhaustsAFlow reports whether ids take all of a flow's candidates when
// it had limit of them (and so may have more), unless its tenant used all
// its slots.
func exhaustsAFlow(cands []FairCandidate, ids []int64, limit int, slots map[string]int) bool {
	taken := make(map[int64]bool, len(ids))
	for _, id := range ids {
		taken[id] = true
	}
	read, took := map[FairKey]int{}, map[FairKey]int{}
	tenantTook := map[string]int{}
	for _, c := range cands {
		k := FairKey{c.Queue, c.Tenant}
		read[k]++
		if taken[c.ID] {
			took[k]++
			tenantTook[c.Tenant]++
		}
	}
	for k, n := range read {
		if s, limited := slots[k.Tenant]; limited && tenantTook[k.Tenant] >= s {
			continue
		}
		if n >= limit && took[k] == n {
			return true
		}
	}
	return false
}

// TenantCounts are a tenant's tasks running, claimed, ready and scheduled, as a
// store counts them for Tenants.
type TenantCounts struct{ Running, Claimed, Queued, Scheduled int }

// AddTenantCounts sets the counts of each tenant in out, adding at the
// default weight a tenant with tasks and no setting.
func AddTenantCounts(out map[string]Tenant, counts map[string]TenantCounts) {
	for name, c := range counts {
		t, ok := out[name]
		if !ok {
			t = Tenant{Weight: 1}
		}
		t.Running, t.Claimed, t.Queued, t.Scheduled = c.Running, c.Claimed, c.Queued, c.Scheduled
		out[name] = t
	}
}

// A Throttle says why a tenant's or a queue's ready tasks wait although
// a runner could take them: Reason, and Until, when known, when that ends.
type Throttle struct {
	Reason string    `json:"reason"`
	Until  time.Time `json:"until,omitzero"`
}

// Throttled says why the ready tasks of whose ("tenant", "queue") wait
// on l as of now (nil: they do not): its work quota used up until its
// next period, its most running reached, or its rate's bucket empty.
func (l SharedLimits) Throttled(now time.Time, whose string) *Throttle {
	switch {
	case !l.ThrottledUntil.IsZero() && now.Before(l.ThrottledUntil):
		return &Throttle{Reason: fmt.Sprintf("its %s used its work quota (%d units per %v)", whose, l.WorkQuota, l.WorkPeriod),
			Until: l.ThrottledUntil}
	case l.MaxRunning > 0 && l.Running+l.Claimed >= l.MaxRunning:
		return &Throttle{Reason: fmt.Sprintf("its %s runs its most tasks at once (%d)", whose, l.MaxRunning)}
	case l.Rate > 0 && l.Tokens < 1:
		wait := time.Duration((1 - l.Tokens) / l.Rate * float64(time.Second))
		return &Throttle{Reason: fmt.Sprintf("its %s started its most tasks for now (%g a second)", whose, l.Rate),
			Until: now.Add(wait)}
	}
	return nil
}

// TaskThrottle says why the ready task t waits on its tenant's limits or
// its queue's (Store.Tenants, QueueLimits) as of now; nil when it does
// not (not queued, not ready, or neither holds it back).
func TaskThrottle(t Task, tenants map[string]Tenant, queues map[string]SharedLimits, now time.Time) *Throttle {
	if t.State != StateQueued || t.RunAt.After(now) {
		return nil
	}
	if tn, ok := tenants[t.Tenant]; ok {
		if th := tn.Throttled(now, "tenant"); th != nil {
			return th
		}
	}
	if q, ok := queues[t.Queue]; ok {
		return q.Throttled(now, "queue")
	}
	return nil
}
