package sandbox_test

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// FuzzStintABI calls each stint host function with guest-chosen pointers and
// lengths (the abi_call fixture reads them from stdin) and checks the host
// never fails: a pointer outside the guest's memory is the guest's trap,
// everything else runs, and the outcome is one the call can explain.
func FuzzStintABI(f *testing.F) {
	const pageSize = 64 << 10
	args := func(sel, a, b, grow uint32) []byte {
		in := make([]byte, 16)
		binary.LittleEndian.PutUint32(in[0:], sel)
		binary.LittleEndian.PutUint32(in[4:], a)
		binary.LittleEndian.PutUint32(in[8:], b)
		binary.LittleEndian.PutUint32(in[12:], grow)
		return in
	}
	for sel := uint32(0); sel < 6; sel++ {
		for _, ab := range [][2]uint32{{0, 0}, {0, 16}, {pageSize - 1, 1}, {pageSize - 1, 2}, {pageSize, 0},
			{pageSize, 1}, {2*pageSize - 8, 8}, {0xFFFFFFF0, 64}, {1, 0xFFFFFFFF}, {0x7FFFFFFF, 0x7FFFFFFF}} {
			f.Add(args(sel, ab[0], ab[1], 0))
			f.Add(args(sel, ab[0], ab[1], 1))
		}
	}
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3})

	rt, err := sandbox.New(context.Background(), sandbox.Config{})
	require.NoError(f, err)
	f.Cleanup(func() { _ = rt.Close(context.Background()) })
	mod, err := rt.Compile(context.Background(), wat.MustLoad("abi_call"))
	require.NoError(f, err)
	const maxCheckpoint = 4096

	f.Fuzz(func(t *testing.T, input []byte) {
		var saved int
		out, err := rt.Run(context.Background(), mod, sandbox.Spec{
			Input:      input,
			Checkpoint: []byte("a checkpoint to load"),
			Limits:     sandbox.Limits{MemoryBytes: 2 * sandbox.PageSize, MaxCheckpoint: maxCheckpoint},
			SaveCheckpoint: func(_ context.Context, blob []byte) error {
				saved += len(blob)
				return nil
			},
		})
		require.NoError(t, err)
		padded := make([]byte, 16)
		copy(padded, input)
		sel := binary.LittleEndian.Uint32(padded[0:]) % 6
		a, b := uint64(binary.LittleEndian.Uint32(padded[4:])), uint64(binary.LittleEndian.Uint32(padded[8:]))
		memBytes := uint64(pageSize) * uint64(1+binary.LittleEndian.Uint32(padded[12:])&1)
		takesPointer := sel == 0 || sel == 1
		switch {
		case takesPointer && a+b > memBytes:
			require.Equal(t, sandbox.KindTrapped, out.Kind, "%s", out)
			require.True(t, strings.Contains(out.Message, "pointer out of bounds"), "%s", out)
		default:
			require.Equal(t, sandbox.KindSucceeded, out.Kind, "%s", out)
		}
		if sel == 0 && a+b <= memBytes {
			if b <= maxCheckpoint {
				require.EqualValues(t, b, saved)
			} else {
				require.Zero(t, saved, "a checkpoint over its cap is refused")
			}
		}
	})
}
