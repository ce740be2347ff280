package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/stint-run/stint/guest"
)

const (
	defaultN       = 5_000_000
	defaultEvery   = 50_000
	stopCheckEvery = 1_000
)

// state is what a checkpoint holds: 24 bytes, three little-endian uint64s.
type state struct {
	n     uint64 // the limit the count is for
	next  uint64 // next candidate to test
	count uint64 // primes found below next
}

func (s state) encode() []byte {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint64(b[0:], s.n)
	binary.LittleEndian.PutUint64(b[8:], s.next)
	binary.LittleEndian.PutUint64(b[16:], s.count)
	return b
}

func decode(b []byte) (state, bool) {
	if len(b) != 24 {
		return state{}, false
	}
	return state{
		n:     binary.LittleEndian.Uint64(b[0:]),
		next:  binary.LittleEndian.Uint64(b[8:]),
		count: binary.LittleEndian.Uint64(b[16:]),
	}, true
}

func isPrime(k uint64) bool {
	if k < 2 {
		return false
	}
	if k%2 == 0 {
		return k == 2
	}
	for d := uint64(3); d*d <= k; d += 2 {
		if k%d == 0 {
			return false
		}
	}
	return true
}

// readInput reads "N" or "N EVERY" from stdin: the limit, and how many
// numbers between two checkpoints.
func readInput() (n, every uint64) {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	fields := strings.Fields(string(in))
	n, every = defaultN, defaultEvery
	for i, f := range fields {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil || i > 1 || (i == 1 && v == 0) {
			fail("stdin: want \"N\" or \"N EVERY\" (EVERY > 0), got %q", strings.TrimSpace(string(in)))
		}
		if i == 0 {
			n = v
		} else {
			every = v
		}
	}
	return n, every
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "primes: "+format+"\n", args...)
	os.Exit(1)
}

// save stores s; it exits at once if this attempt lost its lease, since
// nothing it does can count any more.
func save(s state) {
	err := guest.SaveCheckpoint(s.encode())
	switch {
	case err == nil:
		fmt.Fprintf(os.Stderr, "primes: checkpoint at %d\n", s.next)
	case errors.Is(err, guest.ErrLeaseLost):
		fail("%v", err)
	default:
		// The previous checkpoint is kept: a later attempt redoes a little more.
		fmt.Fprintf(os.Stderr, "primes: checkpoint at %d not saved: %v\n", s.next, err)
	}
}

func main() {
	n, every := readInput()
	s := state{n: n, next: 2}
	if b, ok := guest.LoadCheckpoint(); ok {
		if cp, valid := decode(b); valid && cp.n == s.n && cp.next <= s.n {
			s = cp
			fmt.Fprintf(os.Stderr, "primes: resumed from checkpoint at %d\n", s.next)
		} else {
			fmt.Fprintf(os.Stderr, "primes: ignoring a checkpoint that is not for N=%d; starting at %d\n", s.n, s.next)
		}
	} else {
		fmt.Fprintf(os.Stderr, "primes: starting at %d\n", s.next)
	}

	for ; s.next < s.n; s.next++ {
		if s.next%stopCheckEvery == 0 && guest.StopRequested() {
			save(s)
			guest.ExitStopped()
		}
		if s.next%every == 0 {
			save(s)
			guest.Progress(int64(s.next), int64(s.n))
		}
		if isPrime(s.next) {
			s.count++
		}
	}
	guest.Progress(int64(s.n), int64(s.n))
	fmt.Printf("primes below %d: %d\n", s.n, s.count)
}
