//go:build !wasip1

package guest_test

import (
	"bytes"
	"errors"
	"math"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stint-run/stint/guest"
)

func TestMain(m *testing.M) {
	if os.Getenv("STINT_GUEST_TEST_EXIT_STOPPED") == "1" {
		guest.ExitStopped()
	}
	goleak.VerifyTestMain(m)
}

// The tests below swap the package's host stand-in, so they do not run in parallel.

func ptr[T any](v T) *T { return &v }

func TestStandaloneHost(t *testing.T) {
	require.False(t, guest.StopRequested())
	cp, ok := guest.LoadCheckpoint()
	require.False(t, ok)
	require.Nil(t, cp)
	require.NoError(t, guest.SaveCheckpoint([]byte("x")))
	cp, ok = guest.LoadCheckpoint()
	require.False(t, ok, "the stand-in host discards checkpoints")
	require.Nil(t, cp)
	guest.Progress(1, 2)
	d, ok := guest.Deadline()
	require.False(t, ok)
	require.Zero(t, d)
}

func TestStopRequested(t *testing.T) {
	f := &guest.Fake{}
	guest.UseFake(t, f)
	require.False(t, guest.StopRequested())
	f.Stop = 1
	require.True(t, guest.StopRequested())
	f.Stop = 2 // any non-zero value means stop
	require.True(t, guest.StopRequested())
}

func TestSaveCheckpointCodes(t *testing.T) {
	for _, tc := range []struct {
		code int32
		want error
	}{
		{0, nil},
		{-1, guest.ErrCheckpointTooLarge},
		{-2, guest.ErrLeaseLost},
		{-3, guest.ErrCheckpointFailed},
		{-4, guest.ErrUnknownCode},
		{1, guest.ErrUnknownCode},
		{math.MinInt32, guest.ErrUnknownCode},
	} {
		f := &guest.Fake{SaveCode: tc.code}
		guest.UseFake(t, f)
		err := guest.SaveCheckpoint([]byte("state"))
		if tc.want == nil {
			require.NoError(t, err, "code %d", tc.code)
		} else {
			require.ErrorIs(t, err, tc.want, "code %d", tc.code)
		}
		require.Equal(t, [][]byte{[]byte("state")}, f.Saves(), "code %d", tc.code)
	}

	// The sentinels are distinct, and an unknown code names itself.
	err := func() error {
		guest.UseFake(t, &guest.Fake{SaveCode: -42})
		return guest.SaveCheckpoint([]byte("x"))
	}()
	require.ErrorContains(t, err, "-42")
	require.False(t, errors.Is(err, guest.ErrCheckpointFailed))
	require.False(t, errors.Is(guest.ErrLeaseLost, guest.ErrCheckpointFailed))
}

func TestSaveCheckpointPassesBytes(t *testing.T) {
	f := &guest.Fake{}
	guest.UseFake(t, f)

	buf := []byte("first")
	require.NoError(t, guest.SaveCheckpoint(buf))
	copy(buf, "XXXXX") // the caller may reuse its buffer at once
	require.NoError(t, guest.SaveCheckpoint(buf[1:3]))

	big := bytes.Repeat([]byte{0xAB, 0x00, 0xCD}, 1<<20)
	require.NoError(t, guest.SaveCheckpoint(big))

	saves := f.Saves()
	require.Len(t, saves, 3)
	require.Equal(t, []byte("first"), saves[0])
	require.Equal(t, []byte("XX"), saves[1])
	require.Equal(t, big, saves[2])
	require.Equal(t, []bool{false, false, false}, f.SaveNilPointers())
}

func TestSaveCheckpointEmpty(t *testing.T) {
	f := &guest.Fake{}
	guest.UseFake(t, f)
	buf := make([]byte, 8)
	require.NoError(t, guest.SaveCheckpoint(nil))
	require.NoError(t, guest.SaveCheckpoint([]byte{}))
	require.NoError(t, guest.SaveCheckpoint(buf[8:])) // empty, with a non-nil backing array
	require.Equal(t, [][]byte{{}, {}, {}}, f.Saves())
	// A zero-length save passes pointer 0, which every host accepts with length 0.
	require.Equal(t, []bool{true, true, true}, f.SaveNilPointers())
}

func TestLoadCheckpointNone(t *testing.T) {
	f := &guest.Fake{}
	guest.UseFake(t, f)
	cp, ok := guest.LoadCheckpoint()
	require.False(t, ok)
	require.Nil(t, cp)
	require.Empty(t, f.LoadLens(), "no load without a checkpoint")
}

func TestLoadCheckpointEmpty(t *testing.T) {
	f := &guest.Fake{Checkpoint: []byte{}}
	guest.UseFake(t, f)
	cp, ok := guest.LoadCheckpoint()
	require.True(t, ok)
	require.NotNil(t, cp)
	require.Empty(t, cp)
}

func TestLoadCheckpoint(t *testing.T) {
	want := bytes.Repeat([]byte("0123456789"), 100_000)
	f := &guest.Fake{Checkpoint: want}
	guest.UseFake(t, f)

	cp, ok := guest.LoadCheckpoint()
	require.True(t, ok)
	require.Equal(t, want, cp)
	require.Equal(t, []uint32{uint32(len(want))}, f.LoadLens(), "the buffer is exactly the announced size")

	// Each call returns a fresh copy.
	cp[0] = 'X'
	cp2, ok := guest.LoadCheckpoint()
	require.True(t, ok)
	require.Equal(t, want, cp2)
}

func TestLoadCheckpointMisbehavingHost(t *testing.T) {
	t.Run("short copy", func(t *testing.T) {
		guest.UseFake(t, &guest.Fake{Checkpoint: []byte("abcdef"), LoadOverride: ptr[int32](3)})
		cp, ok := guest.LoadCheckpoint()
		require.True(t, ok)
		require.Equal(t, []byte("abc"), cp)
	})
	t.Run("long copy claimed", func(t *testing.T) {
		guest.UseFake(t, &guest.Fake{Checkpoint: []byte("abcdef"), LoadOverride: ptr[int32](1000)})
		cp, ok := guest.LoadCheckpoint()
		require.True(t, ok)
		require.Equal(t, []byte("abcdef"), cp)
	})
	t.Run("size then none", func(t *testing.T) {
		guest.UseFake(t, &guest.Fake{SizeOverride: ptr[int32](4), LoadOverride: ptr[int32](-1)})
		cp, ok := guest.LoadCheckpoint()
		require.False(t, ok)
		require.Nil(t, cp)
	})
	t.Run("size larger than blob", func(t *testing.T) {
		f := &guest.Fake{Checkpoint: []byte("ab"), SizeOverride: ptr[int32](10)}
		guest.UseFake(t, f)
		cp, ok := guest.LoadCheckpoint()
		require.True(t, ok)
		require.Equal(t, []byte("ab"), cp)
		require.Equal(t, []uint32{10}, f.LoadLens())
	})
	t.Run("negative size other than -1", func(t *testing.T) {
		guest.UseFake(t, &guest.Fake{SizeOverride: ptr[int32](-7)})
		cp, ok := guest.LoadCheckpoint()
		require.False(t, ok)
		require.Nil(t, cp)
	})
}

func TestProgress(t *testing.T) {
	f := &guest.Fake{}
	guest.UseFake(t, f)
	guest.Progress(0, 10)
	guest.Progress(3, 10)
	guest.Progress(math.MaxInt64, -1)
	require.Equal(t, [][2]int64{{0, 10}, {3, 10}, {math.MaxInt64, -1}}, f.ProgressReports())
}

func TestDeadline(t *testing.T) {
	for _, tc := range []struct {
		ms     int64
		want   time.Duration
		wantOK bool
	}{
		{-1, 0, false},
		{-5, 0, false},
		{0, 0, true},
		{1500, 1500 * time.Millisecond, true},
		{math.MaxInt64, time.Duration(math.MaxInt64), true},
		{math.MaxInt64 / int64(time.Millisecond), time.Duration(math.MaxInt64/int64(time.Millisecond)) * time.Millisecond, true},
	} {
		guest.UseFake(t, &guest.Fake{DeadlineMs: tc.ms})
		d, ok := guest.Deadline()
		require.Equal(t, tc.wantOK, ok, "ms %d", tc.ms)
		require.Equal(t, tc.want, d, "ms %d", tc.ms)
	}
}

func TestConcurrentCalls(t *testing.T) {
	f := &guest.Fake{Stop: 1, Checkpoint: []byte("cp")}
	guest.UseFake(t, f)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_ = guest.StopRequested()
				_, _ = guest.LoadCheckpoint()
				_ = guest.SaveCheckpoint([]byte("cp"))
				guest.Progress(1, 2)
			}
		})
	}
	wg.Wait()
	require.Len(t, f.Saves(), 800)
}

func TestExitStopped(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "STINT_GUEST_TEST_EXIT_STOPPED=1")
	err = cmd.Run()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr)
	require.Equal(t, guest.ExitInterrupted, exitErr.ExitCode())
	require.Equal(t, 75, guest.ExitInterrupted)
}
