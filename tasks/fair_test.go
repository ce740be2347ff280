package tasks_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// TestPlanFairClaimFetching: reading few candidates per flow, and more
// only where the plan took all of a flow's, chooses what reading every
// candidate chooses, on random flows (sizes, priorities, weights, passes,
// tenants' and queues' slots, queues and their maxima); and it reads fewer
// than all when flows are many.
func TestPlanFairClaimFetching(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	fewer := 0
	for round := range 2000 {
		var all []tasks.FairCandidate
		st := tasks.FairState{Passes: map[tasks.FairKey]int64{}, Weights: map[string]int{}, Clocks: map[string]int64{}}
		maxima := map[string]int{}
		queues := 1 + rng.IntN(3)
		flows := 0
		id := int64(0)
		for q := range queues {
			qn := fmt.Sprint("q", q)
			maxima[qn] = 1 + rng.IntN(40)
			st.Clocks[qn] = rng.Int64N(3 * tasks.FairStride)
			if rng.IntN(3) == 0 {
				if st.QueueSlots == nil {
					st.QueueSlots = map[string]int{}
				}
				st.QueueSlots[qn] = rng.IntN(6)
			}
			for tn := range 1 + rng.IntN(30) {
				tenant := fmt.Sprint("t", tn)
				st.Weights[tenant] = 1 + rng.IntN(5)
				if rng.IntN(4) == 0 {
					if st.Slots == nil {
						st.Slots = map[string]int{}
					}
					st.Slots[tenant] = rng.IntN(4)
				}
				st.Passes[tasks.FairKey{Queue: qn, Tenant: tenant}] = rng.Int64N(4 * tasks.FairStride)
				flows++
				for range rng.IntN(25) {
					id++
					all = append(all, tasks.FairCandidate{ID: id, Queue: qn, Tenant: tenant, Priority: rng.IntN(3) - 1,
						RunAt: start.Add(time.Duration(rng.IntN(100)) * time.Second)})
				}
			}
		}
		// Each flow's candidates in its claim order, as a store reads them.
		slices.SortFunc(all, func(a, b tasks.FairCandidate) int {
			return cmp.Or(cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(b.Priority, a.Priority),
				a.RunAt.Compare(b.RunAt), cmp.Compare(a.ID, b.ID))
		})
		most := 1 + rng.IntN(64)
		var mx map[string]int
		if rng.IntN(2) == 0 {
			mx = maxima
		}
		read := 0
		fetch := func(limit int) ([]tasks.FairCandidate, error) {
			var out []tasks.FairCandidate
			n := map[tasks.FairKey]int{}
			for _, c := range all {
				k := tasks.FairKey{Queue: c.Queue, Tenant: c.Tenant}
				l := limit
				if mx != nil {
					l = min(l, mx[c.Queue])
				}
				if n[k] < l {
					n[k]++
					out = append(out, c)
				}
			}
			read += len(out)
			return out, nil
		}
		got, err := tasks.PlanFairClaimFetching(fetch, flows, st, mx, most)
		require.NoError(t, err)
		want := tasks.PlanFairClaim(all, st, mx, most)
		require.Equal(t, want, got, "round %d", round)
		if read < len(all) {
			fewer++
		}
	}
	require.Greater(t, fewer, 1000, "most plans read fewer candidates than all")
}
