package extismkernel

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox/internal/memory"
)

// trap runs f and returns the *Error it panics with (nil if none).
func trap(f func()) (err *Error) {
	defer func() {
		if p := recover(); p != nil {
			err = p.(*Error)
		}
	}()
	f()
	return nil
}

// TestKernelBlocks: blocks are zeroed, their lengths are what was asked,
// a freed block is reused, the last one gives its room back, and every
// byte held is charged to the budget.
func TestKernelBlocks(t *testing.T) {
	t.Parallel()
	budget := &memory.Budget{Limit: 1 << 20}
	k := New(budget)
	a := k.Alloc(5, 0)
	require.Equal(t, uint64(extismBase), a)
	require.Equal(t, uint64(5), k.Length(a))
	k.StoreU64(a, 0x0102030405060708)
	require.Equal(t, uint64(0x0102030405060708), k.LoadU64(a))
	b := k.Alloc(100, 0)
	require.Equal(t, uint64(8+2*extismBlockOverhead+104), k.charge)
	k.StoreU8(b+99, 7)
	require.Equal(t, uint8(7), k.LoadU8(b+99))
	k.Free(a)
	require.Zero(t, k.Length(a), "freed")
	require.Equal(t, a, k.Alloc(8, 0), "the freed block, reused")
	require.Equal(t, make([]byte, 8), k.Block("test", a), "zeroed again")
	k.Free(b)
	require.Equal(t, b, k.top, "the last block's room comes back")
	require.Equal(t, uint64(8+extismBlockOverhead), k.charge)
	require.Equal(t, b-extismBase, k.MemoryBytes())
	k.Reset()
	require.Zero(t, k.charge)
	require.Zero(t, k.MemoryBytes())
	require.False(t, budget.Hit())
}

// TestKernelMisuse: a bad offset, length or block traps naming the
// function; past the memory limit alloc traps and marks the budget hit.
func TestKernelMisuse(t *testing.T) {
	t.Parallel()
	budget := &memory.Budget{Limit: 4096}
	k := New(budget)
	off := k.Alloc(16, 0)
	require.Contains(t, trap(func() { k.LoadU64(off + 12) }).Error(), Module+".load_u64: offset")
	require.Contains(t, trap(func() { k.StoreU8(0, 1) }).Error(), Module+".store_u8: offset 0")
	require.Contains(t, trap(func() { k.Block("var_get", off+8) }).Error(), "is not a live memory block")
	require.Contains(t, trap(func() { k.InputSpan("input_load_u8", 0, 1) }).Error(), "outside the input")
	require.Nil(t, trap(func() { k.Free(12345) }), "an unknown block is ignored")
	e := trap(func() { k.Alloc(3000, 2000) })
	require.NotNil(t, e)
	require.Equal(t, "alloc", e.Func)
	require.True(t, budget.Hit())
	require.Error(t, k.SetInput(make([]byte, 5000), 0), "over the limit outside the guest: an error")
}

// TestKernelCall: the input, the output (a copy, bounded by MaxOutput),
// the error and the vars.
func TestKernelCall(t *testing.T) {
	t.Parallel()
	k := New(&memory.Budget{Limit: 4 << 20})
	k.Reset()
	k.MaxOutput = 4
	require.NoError(t, k.SetInput([]byte("hi"), 0))
	require.Equal(t, uint64(2), k.InputLength())
	require.Equal(t, byte('i'), k.InputSpan("input_load_u8", 1, 1)[0])
	out := k.WriteBlock([]byte("abcde"), 0)
	require.False(t, k.OutputSet(out, 5), "over MaxOutput")
	require.True(t, k.OutputSet(out, 4))
	k.Free(out)
	require.Equal(t, []byte("abcd"), k.TakeOutput())
	k.ErrorSet(k.WriteBlock([]byte("boom"), 0))
	require.Equal(t, "boom", k.ErrorMessage())
	require.NotZero(t, k.ErrorOffset())
	k.VarSet(k.WriteBlock([]byte("n"), 0), k.WriteBlock([]byte("v"), 0))
	v, ok := k.VarGet(k.WriteBlock([]byte("n"), 0))
	require.True(t, ok)
	require.Equal(t, []byte("v"), v)
	k.Reset()
	require.Empty(t, k.ErrorMessage())
	require.Equal(t, []byte{}, k.TakeOutput(), "no output set: empty, not nil")
	v, ok = k.VarGet(k.WriteBlock([]byte("n"), 0))
	require.True(t, ok && string(v) == "v", "vars outlive the call")
	big := k.WriteBlock(make([]byte, MaxVarBytes), 0)
	require.Contains(t, trap(func() { k.VarSet(k.WriteBlock([]byte("big"), 0), big) }).Error(), "over their limit")
}
