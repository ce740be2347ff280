package batch

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/bytesize"
)

// readSized reads what bytesize.ReadAtMost reads, whatever size fstat said (the
// file's length, or a stale one: it grew or shrank since) and whatever
// the limit: the same bytes, or an error where bytesize.ReadAtMost errs. The
// reader is a bytes.Reader, whose reads are short only at the end, as a
// regular file's are.
func TestReadSizedReadsWhatReadAtMostReads(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	for i := range 5000 {
		content := make([]byte, rng.IntN(300))
		for k := range content {
			content[k] = byte(rng.IntN(256))
		}
		size := int64(len(content))
		switch rng.IntN(4) {
		case 0: // grew since fstat
			size -= int64(rng.IntN(len(content) + 1))
		case 1: // shrank since fstat
			size += int64(1 + rng.IntN(50))
		case 2:
			size = 0
		}
		var max int64
		if rng.IntN(2) == 0 {
			max = int64(1 + rng.IntN(300))
		}
		want, wantErr := bytesize.ReadAtMost(bytes.NewReader(content), max)
		got, err := readSized(bytes.NewReader(content), size, max)
		if wantErr != nil {
			require.Error(t, err, "case %d: %d bytes, size %d, max %d", i, len(content), size, max)
			continue
		}
		require.NoError(t, err, "case %d: %d bytes, size %d, max %d", i, len(content), size, max)
		require.Equal(t, len(want), len(got), "case %d", i)
		require.True(t, bytes.Equal(want, got), "case %d: %d bytes, size %d, max %d", i, len(content), size, max)
	}
}

// A read error, on the first read or after it, is readSized's error.
func TestReadSizedError(t *testing.T) {
	boom := errors.New("boom")
	_, err := readSized(iotest.ErrReader(boom), 10, 0)
	require.ErrorIs(t, err, boom)
	// 4 bytes where fstat said 10: it reads on, and meets the error.
	_, err = readSized(io.MultiReader(bytes.NewReader([]byte("abcd")), iotest.ErrReader(boom)), 10, 100)
	require.ErrorIs(t, err, boom)
}
