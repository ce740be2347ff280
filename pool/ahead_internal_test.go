package pool

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestAheadForBounds: for random pools and attempt durations (extremes
// included), what a pool claims ahead stays within [0, ClaimBatch], is
// none while the duration is unknown or at least the horizon, shrinks as
// attempts get longer and grows with the workers: what it holds
// (claimRequest's target) never passes Workers+ClaimBatch, which the
// ready channel holds.
func TestAheadForBounds(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(29, uint64(time.Now().UnixNano())))
	dur := func() time.Duration {
		switch r.IntN(6) {
		case 0:
			return 0
		case 1:
			return time.Duration(r.Int64()) // up to 292 years
		case 2:
			return time.Duration(r.IntN(10)) // a few ns
		default:
			return time.Duration(r.Int64N(int64(time.Second)))
		}
	}
	for range 100000 {
		workers, batch := 1+r.IntN(1000), 1+r.IntN(4096)
		horizon, avg := dur(), dur()
		if r.IntN(10) == 0 {
			horizon = -horizon
		}
		got := aheadFor(workers, batch, horizon, avg)
		if got < 0 || got > batch {
			t.Fatalf("aheadFor(%d, %d, %v, %v) = %d, outside [0, %d]", workers, batch, horizon, avg, got, batch)
		}
		if (avg <= 0 || horizon <= 0 || avg >= horizon) && got != 0 {
			t.Fatalf("aheadFor(%d, %d, %v, %v) = %d, want 0", workers, batch, horizon, avg, got)
		}
		if avg > 0 && avg < horizon && got == 0 {
			t.Fatalf("aheadFor(%d, %d, %v, %v) = 0: an attempt shorter than the horizon is claimed ahead", workers, batch, horizon, avg)
		}
		if longer := avg + 1 + time.Duration(r.Int64N(int64(time.Millisecond))); avg > 0 && longer > avg {
			if g := aheadFor(workers, batch, horizon, longer); g > got {
				t.Fatalf("aheadFor grows with the attempts' duration: %v -> %d, %v -> %d", avg, got, longer, g)
			}
		}
		if g := aheadFor(workers+1, batch, horizon, avg); g < got {
			t.Fatalf("aheadFor shrinks with more workers: %d -> %d, %d -> %d", workers, got, workers+1, g)
		}
	}
}
