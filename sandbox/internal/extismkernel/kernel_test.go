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

// TestKernelEmptyAccess: on a kernel that never allocated (no arena yet),
// and after a Reset that dropped a big arena, every accessor answers for
// any offset and length: an empty span at the end of the memory in use is
// empty, the rest is refused (false, or an *Error for the guest's calls),
// never a runtime panic.
func TestKernelEmptyAccess(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"new", "reset"} {
		k := New(&memory.Budget{Limit: 4 << 20})
		if name == "reset" {
			k.Alloc(extismKeepArena+1, 0)
			k.Reset()
			require.Nil(t, k.mem, "the big arena is dropped")
		}
		b, ok := k.Mem(extismBase, 0)
		require.True(t, ok, name)
		require.Empty(t, b, name)
		for _, span := range [][2]uint64{{extismBase, 1}, {0, 0}, {9, 0}, {1 << 40, 0}, {^uint64(0), ^uint64(0)}} {
			_, ok := k.Mem(span[0], span[1])
			require.False(t, ok, "%s: Mem(%d, %d)", name, span[0], span[1])
		}
		_, ok = k.LiveBlock(extismBase)
		require.False(t, ok, name)
		require.NotNil(t, trap(func() { k.LoadU8(extismBase) }), name)
		require.NotNil(t, trap(func() { k.StoreU64(extismBase, 1) }), name)
		require.NotNil(t, trap(func() { k.Block("var_get", extismBase) }), name)
		require.Nil(t, trap(func() { k.InputSet(extismBase, 0) }), name)
		require.Empty(t, k.InputSpan("input_load_u8", 0, 0), name)
		require.True(t, k.OutputSet(extismBase, 0), name)
	}
}

// TestKernelInputAfterFree: an input whose room a free gave back is
// refused (an *Error), not read past the memory in use.
func TestKernelInputAfterFree(t *testing.T) {
	t.Parallel()
	k := New(&memory.Budget{Limit: 4 << 20})
	off := k.Alloc(16, 0)
	k.InputSet(off, 16)
	k.Free(off)
	require.NotNil(t, trap(func() { k.InputSpan("input_load_u64", 8, 8) }))
	require.Nil(t, trap(func() { k.InputSet(1<<40, 0) }), "an empty input anywhere in range")
}

// FuzzKernel runs a program of kernel calls, each byte pair an operation
// and its operands (offsets and lengths drawn from the edges: 0, 8, the
// end of the memory in use and around it, 2^32, the largest uint64), and
// checks that every call returns or traps with an *Error, and that a span
// Mem grants has the length asked. Its seeds run as part of go test.
func FuzzKernel(f *testing.F) {
	f.Add([]byte{7, 8, 0})                       // Mem(8, 0) on an empty kernel
	f.Add([]byte{0, 16, 4, 0, 7, 8, 2, 5, 4, 0}) // alloc, free, mem, reset
	f.Add([]byte{0, 200, 6, 3, 1, 9, 2, 2, 8, 1, 3, 5, 0})
	f.Add([]byte{0, 255, 0, 40, 9, 1, 2, 4, 8, 0, 10, 4, 11, 1})
	f.Add([]byte{12, 5, 0, 13, 2, 6, 1, 0, 9, 0})
	f.Fuzz(func(t *testing.T, prog []byte) {
		k := New(&memory.Budget{Limit: 1 << 20})
		k.MaxOutput = 1 << 10
		var offs []uint64
		val := func(b byte) uint64 {
			top := k.top
			edges := []uint64{0, 1, extismBase, extismBase + 1, top, top - 1, top + 1, top - 8, 1 << 32, ^uint64(0), ^uint64(0) - 7}
			if int(b) < len(edges) {
				return edges[b]
			}
			if b >= 200 && len(offs) > 0 {
				return offs[int(b)%len(offs)]
			}
			return uint64(b)
		}
		for len(prog) >= 3 {
			op, a, b := prog[0], val(prog[1]), val(prog[2])
			prog = prog[3:]
			func() {
				defer func() {
					if p := recover(); p != nil {
						if _, ok := p.(*Error); !ok {
							t.Fatalf("op %d (%d, %d): panic %v", op, a, b, p)
						}
					}
				}()
				switch op % 16 {
				case 0:
					offs = append(offs, k.Alloc(a%4096, b%4096))
				case 1:
					k.Free(a)
				case 2:
					k.Length(a)
					k.LiveBlock(a)
				case 3:
					k.Block("var_get", a)
				case 4:
					k.Reset()
				case 5:
					k.LoadU8(a)
				case 6:
					k.LoadU64(a)
				case 7:
					if m, ok := k.Mem(a, b); ok && uint64(len(m)) != b {
						t.Fatalf("Mem(%d, %d): %d bytes", a, b, len(m))
					}
				case 8:
					k.StoreU8(a, uint8(b))
				case 9:
					k.StoreU64(a, b)
				case 10:
					k.InputSet(a, b)
				case 11:
					k.InputSpan("input_load_u8", a, b)
				case 12:
					k.OutputSet(a, b)
				case 13:
					k.ErrorSet(a)
				case 14:
					k.VarSet(a, b)
				case 15:
					k.VarGet(a)
					_ = k.SetInput([]byte("in"), b%4096)
					k.TakeOutput()
				}
			}()
		}
	})
}
