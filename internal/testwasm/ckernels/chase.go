package ckernels

import (
	"fmt"
	"strings"
)

// ChaseInput is chase's stdin for rounds rounds through mib MiB.
func ChaseInput(rounds, mib int) []byte { return fmt.Appendf(nil, "%d %d", rounds, mib) }

// ChaseOutput is what src/chase.c prints for ChaseInput(rounds, mib),
// computed again in Go: the oracle the snapshot tests check a suspended
// and resumed chase against, which shares no code with the guest or the
// sandbox.
func ChaseOutput(rounds, mib int) string {
	n := mib << 20 / 4
	next := make([]uint32, n)
	for i := range next {
		next[i] = uint32(i)
	}
	state := uint32(2463534242) // common.h's xorshift32
	rng := func() uint32 {
		x := state
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		state = x
		return x
	}
	for i := n - 1; i > 0; i-- { // Sattolo's algorithm: one cycle
		j := int(rng() % uint32(i))
		next[i], next[j] = next[j], next[i]
	}
	var b strings.Builder
	at, sum := uint32(0), uint64(0)
	for r := 1; r <= rounds; r++ {
		for range n {
			at = next[at]
			sum = sum*31 + uint64(at)
		}
		fmt.Fprintf(&b, "round %d of %d: at %d, checksum %016x\n", r, rounds, at, sum)
	}
	return b.String()
}
