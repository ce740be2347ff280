package memory

import (
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestConcurrentFreeGivesBackOnce: a memory freed by two goroutines at once
// (wazero's Close of the runtime, and an abandoned call's guest worker
// discarding its instance) goes back to the pool once, so no two
// instances can ever be handed the same buffer. Under -race (make test)
// the unguarded Free is reported; without it, a buffer put back twice
// comes out of the pool twice.
func TestConcurrentFreeGivesBackOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
	for range 200 {
		pool := &Pool{}
		b := &Budget{Limit: 1 << 24, Pool: pool}
		size := uint64(1+rng.IntN(16)) * pageSize
		m := b.Allocate(0, 1<<24)
		require.NotNil(t, m.Reallocate(size))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				m.Free()
			}()
		}
		close(start)
		wg.Wait()
		a, c := pool.get(size, 1<<24), pool.get(size, 1<<24)
		require.NotEqual(t, unsafe.Pointer(unsafe.SliceData(a)), unsafe.Pointer(unsafe.SliceData(c)), "one buffer handed out twice")
	}
}
