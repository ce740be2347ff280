package rewrite

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox/internal/wasmtest"
)

// TestBulkChargeEquivalent: with every bulk operation charged by its
// size and large fills and copies done in pieces (bulkHelpers), the
// bulk_ops fixture computes what the original computes, in both modes,
// traps included (past the memory's end).
func TestBulkChargeEquivalent(t *testing.T) {
	t.Parallel()
	wasm := wat.MustLoad("bulk_ops")
	r := plainRuntime(t, nil)
	for _, checks := range []bool{true, false} {
		p := prepareDefault(t, wasm, checks)
		for _, n := range []uint64{0, 1, 2, 7, 300, 65_000, 70_000} {
			want := wasmtest.RunPlain(t, r, wasm, "run", "", n)
			got := wasmtest.RunPlain(t, r, p.Wasm, "run", "", n)
			require.Equal(t, want, got, "checks %v, n %d", checks, n)
			if n < 65_000 {
				require.Empty(t, want.Err, "n %d", n)
			} else {
				require.Contains(t, want.Err, "out of bounds", "n %d", n)
			}
		}
		// Megabytes: in 1 MiB pieces, forward and from the end; the
		// memory after is the same, byte for byte (its hash).
		for _, x := range []uint64{3, 7} {
			want := wasmtest.RunPlain(t, r, wasm, "big", "", x)
			got := wasmtest.RunPlain(t, r, p.Wasm, "big", "", x)
			require.Equal(t, want, got, "checks %v, x %d", checks, x)
			require.NotEmpty(t, want.Memory)
			require.Equal(t, x == 7, want.Err != "", "x %d: %s", x, want.Err)
		}
	}
}
