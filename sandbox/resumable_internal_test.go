package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero/api"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/internal/testwasm/ckernels"
	"github.com/stint-run/stint/internal/testwasm/wat"
)

// A resumable guest suspended at chosen points and resumed, each time
// through an encoded snapshot in a fresh Runtime, gives the same stdout,
// stderr and exit code as its run without a stop.

// resumeCase is one guest and its workload.
type resumeCase struct {
	name  string
	wasm  []byte
	stdin []byte
	args  []string
}

func resumableRuntime(t testing.TB) *Runtime {
	t.Helper()
	// A compile budget for the race detector's build, where preparing a
	// large module takes far longer (the budget is not what is tested).
	r, err := New(context.Background(), Config{Resumable: true, CacheDir: testwasm.CompileCacheDir(t), CompileTimeout: 10 * time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// runSuspended runs c, suspending it after each of the interrupt counts
// in after (one per run), and returns the final outcome and how many
// runs it took.
func runSuspended(t *testing.T, c resumeCase, after []int) (*Outcome, int) {
	t.Helper()
	ctx := context.Background()
	var snap *Snapshot
	for runs := 1; ; runs++ {
		r := resumableRuntime(t) // a fresh runtime each time: nothing kept in memory
		mod, err := r.Compile(ctx, c.wasm)
		require.NoError(t, err)
		require.True(t, mod.resumable, "the module is not resumable")
		spec := Spec{Input: c.stdin, Args: c.args, Resume: snap, Limits: Limits{MemoryBytes: 256 << 20}}
		if runs <= len(after) {
			ch := make(chan struct{})
			close(ch)
			spec.Suspend, spec.suspendAfter = ch, after[runs-1]
		}
		out, err := r.Run(ctx, mod, spec)
		require.NoError(t, err)
		if out.Kind != KindSuspended {
			return out, runs
		}
		var buf bytes.Buffer
		require.NoError(t, out.Snapshot.Encode(&buf))
		snap, err = DecodeSnapshot(&buf)
		require.NoError(t, err)
	}
}

func resumeCases(t *testing.T) []resumeCase {
	cases := []resumeCase{
		{name: "go-primes", wasm: readFile(t, testwasm.GoGuest(t, "primes")), args: []string{"200000"}},
		{name: "go-hello", wasm: readFile(t, testwasm.GoGuest(t, "hello")), stdin: bytes.Repeat([]byte("a line of input\n"), 2000)},
	}
	const corpus = "../../shared/corpus"
	if _, err := os.Stat(corpus); err == nil {
		lua := readFile(t, filepath.Join(corpus, "lua.wasm"))
		script := readFile(t, filepath.Join(corpus, "bench.lua"))
		cases = append(cases,
			resumeCase{name: "real-lua", wasm: lua, stdin: script, args: []string{"-"}},
			resumeCase{name: "real-zstd", wasm: readFile(t, filepath.Join(corpus, "zstd.wasm")),
				stdin: bytes.Repeat(script, 20), args: []string{"-q", "-c", "-3"}})
		if testwasm.Race {
			t.Log("the SQLite shell is left out under the race detector (its preparation alone takes minutes there); go test without -race runs it")
		} else {
			cases = append(cases, resumeCase{name: "real-sqlite", wasm: readFile(t, filepath.Join(corpus, "sqlite3.wasm")),
				stdin: readFile(t, filepath.Join(corpus, "sqlite-work.sql")), args: []string{":memory:"}})
		}
	} else {
		t.Logf("the corpus's real programs are left out: %s is absent", corpus)
	}
	return cases
}

// readFile is internal/testutil's ReadFile, by the name the tests use.
var readFile = testutil.ReadFile

// TestResumeRealGuests suspends each guest up to three times at random
// interrupts and resumes it from an encoded snapshot in a fresh Runtime:
// byte-identical stdout and stderr, the same exit code.
func TestResumeRealGuests(t *testing.T) {
	for _, c := range resumeCases(t) {
		t.Run(c.name, func(t *testing.T) {
			want, runs := runSuspended(t, c, nil)
			require.Equal(t, 1, runs)
			require.Equal(t, KindSucceeded, want.Kind, want.Message)
			rng := rand.New(rand.NewPCG(uint64(len(c.wasm)), 7))
			for trial := range 2 {
				after := []int{rng.IntN(20), rng.IntN(200), rng.IntN(5)}
				got, runs := runSuspended(t, c, after)
				require.Equal(t, want.Kind, got.Kind, "trial %d (%v): %s", trial, after, got.Message)
				require.Equal(t, want.ExitCode, got.ExitCode)
				require.True(t, bytes.Equal(want.Stdout, got.Stdout), "trial %d (%v): stdout differs", trial, after)
				require.True(t, bytes.Equal(want.Stderr, got.Stderr), "trial %d (%v): stderr differs", trial, after)
				t.Logf("trial %d: suspended after %v interrupts: %d runs, %d bytes of stdout", trial, after, runs, len(got.Stdout))
			}
		})
	}
}

// resumeSeeds is the first seed and how many random programs
// TestResumeRandomPrograms runs (STINT_RESUME_SEED0, STINT_RESUME_SEEDS;
// make fuzz runs more from a random first seed; a failure names its seed).
func resumeSeeds() (first, n uint64) {
	n = 400
	if testing.Short() {
		n = 40
	}
	if v, err := strconv.ParseUint(os.Getenv("STINT_RESUME_SEEDS"), 10, 64); err == nil && v > 0 {
		n = v
	}
	first, _ = strconv.ParseUint(os.Getenv("STINT_RESUME_SEED0"), 10, 64)
	return first, n
}

// TestResumeRandomPrograms: the bound's random programs (bound_prop_test.go:
// loops, recursion, call_indirect, br_table, bulk fills, and host calls
// that are sleeps of a nanosecond, poll_oneoff), made resumable and
// suspended up to 5 times at random interrupts or in a sleep, each time
// through an encoded snapshot (the first whole, each later one a delta
// appended to the chain, as the queue stores them): the oracle global ops (every byte of
// straight-line code run, so code run twice or skipped shows), the final
// memory and the exit code equal the run without a stop. (Without the
// generator's table.set: a snapshot does not hold tables yet.)
func TestResumeRandomPrograms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := resumableRuntime(t)
	type final struct {
		kind  Kind
		code  uint32
		ops   uint64
		mem   [32]byte
		units int64
	}
	run := func(mod *Module, snap *Snapshot, after int, f *final) *Outcome {
		spec := Spec{Resume: snap, Limits: Limits{Work: 8 << 20}, Stdin: &endlessStdin{}}
		if after >= 0 {
			ch := make(chan struct{})
			close(ch)
			spec.Suspend, spec.suspendAfter = ch, after
		}
		spec.inspect = func(inst api.Module) {
			f.ops = inst.ExportedGlobal("ops").Get()
			b, _ := inst.Memory().Read(0, inst.Memory().Size())
			f.mem = sha256.Sum256(b)
		}
		out, err := r.Run(ctx, mod, spec)
		require.NoError(t, err)
		f.kind, f.code, f.units = out.Kind, out.ExitCode, out.WorkUnits
		return out
	}
	tried, suspensions, asleep, reading, tooLong, deltas := 0, 0, 0, 0, 0, 0
	first, n := resumeSeeds()
	for seed := first; seed < first+n; seed++ {
		p := genBound(rand.New(rand.NewPCG(seed, 23)), entryStart)
		what := fmt.Sprintf("seed %d", seed)
		mod, err := r.Compile(ctx, p.wasm)
		require.NoError(t, err, what)
		require.True(t, mod.resumable, what)
		var want final
		run(mod, nil, -1, &want)
		if want.kind == KindWorkLimit || want.units > 7<<20 {
			// Too long a program for a test (or so near the limit that
			// the work of unwinding and rewinding could pass it).
			tooLong++
			continue
		}
		tried++
		rng := rand.New(rand.NewPCG(seed, 5))
		var got final
		var snap *Snapshot
		// Each snapshot is stored as the queue stores a run's: the first
		// whole, each later one as a delta appended to the chain, which
		// decodes as the later snapshot (Snapshot.EncodeDelta).
		var chain bytes.Buffer
		var digest *SnapshotDigest
		for i := 0; ; i++ {
			after := -1
			if i < 5 {
				after = rng.IntN(3)
			}
			out := run(mod, snap, after, &got)
			if out.Kind != KindSuspended {
				break
			}
			suspensions++
			if out.Snapshot.sleepLeft >= 0 {
				asleep++
			}
			if out.Snapshot.reading {
				reading++
			}
			digest, err = out.Snapshot.EncodeDelta(&chain, digest)
			require.NoError(t, err, what)
			if digest != nil && i > 0 {
				deltas++
			}
			snap, err = DecodeSnapshot(bytes.NewReader(chain.Bytes()))
			require.NoError(t, err, what)
		}
		require.Equal(t, want.kind, got.kind, what)
		require.Equal(t, want.code, got.code, what)
		require.Equal(t, want.ops, got.ops, "%s: the bytes of code run differ: code ran twice or was skipped", what)
		require.Equal(t, want.mem, got.mem, "%s: the final memory differs", what)
		require.GreaterOrEqual(t, got.units, want.units, what)
	}
	t.Logf("%d programs, %d suspensions, %d of them in a sleep, %d in a read of stdin, %d resumed from a delta chain (%d left out, over the work limit)",
		tried, suspensions, asleep, reading, deltas, tooLong)
	require.Greater(t, deltas, int(n/8), "too few resumes from a chain of deltas to prove anything")
	require.Greater(t, suspensions, int(n/4), "too few suspensions to prove anything")
	require.Greater(t, asleep, int(n/40), "too few suspensions in a sleep to prove anything")
	require.Greater(t, reading, int(n/40), "too few suspensions in a read of stdin to prove anything")
}

// endlessStdin is a stdin that never ends, read through the sandbox's
// goroutine (not an in-memory reader): byte i is a function of i, and a
// read gives 1 to 7 bytes by where it starts, so that reads are often
// short (after one that fills its buffer, a read is not a point).
type endlessStdin struct{ pos int64 }

func (e *endlessStdin) Read(p []byte) (int, error) {
	n := min(len(p), int(1+e.pos%7))
	for i := range n {
		p[i] = byte((e.pos+int64(i))*131 + 7)
	}
	e.pos += int64(n)
	return n, nil
}

// suspendedCounter runs the counter fixture (a guest that knows nothing of
// Stint) until it suspends, and returns its module and snapshot.
func suspendedCounter(t testing.TB, r *Runtime) (*Module, *Snapshot) {
	t.Helper()
	ctx := context.Background()
	mod, err := r.Compile(ctx, wat.MustLoad("counter"))
	require.NoError(t, err)
	require.True(t, mod.Resumable())
	ch := make(chan struct{})
	close(ch)
	out, err := r.Run(ctx, mod, Spec{Args: []string{"a"}, Suspend: ch, suspendAfter: 3})
	require.NoError(t, err)
	require.Equal(t, KindSuspended, out.Kind, out.Message)
	return mod, out.Snapshot
}

// TestSuspendInCallFreeLoop: a guest spinning in a loop without calls
// (the loop fixture) suspends, and suspends again once resumed: the
// point of such a loop lies on its slow path, before the interrupt call
// (rewrite's points.go), and a request made by one interrupt call is
// acted on at the next. A point the slow path never reached would leave
// the guest spinning to its timeout.
func TestSuspendInCallFreeLoop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := resumableRuntime(t)
	mod, err := r.Compile(ctx, wat.MustLoad("loop"))
	require.NoError(t, err)
	require.True(t, mod.Resumable())
	var snap *Snapshot
	for range 2 {
		ch := make(chan struct{})
		close(ch)
		out, err := r.Run(ctx, mod, Spec{Resume: snap, Suspend: ch, suspendAfter: 2, Limits: Limits{Timeout: time.Minute}})
		require.NoError(t, err)
		require.Equal(t, KindSuspended, out.Kind, out.Message)
		snap = out.Snapshot
	}
}

// TestSnapshotRefusedOnMismatch: a snapshot given with other arguments,
// environment or module is refused, and nothing of it is applied.
func TestSnapshotRefusedOnMismatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := resumableRuntime(t)
	mod, snap := suspendedCounter(t, r)
	for _, spec := range []Spec{
		{Args: []string{"b"}, Resume: snap},
		{Args: []string{"a"}, Env: map[string]string{"K": "V"}, Resume: snap},
	} {
		_, err := r.Run(ctx, mod, spec)
		require.ErrorIs(t, err, ErrSnapshotMismatch)
	}
	other, err := r.Compile(ctx, wat.MustLoad("loop"))
	require.NoError(t, err)
	_, err = r.Run(ctx, other, Spec{Args: []string{"a"}, Resume: snap})
	require.ErrorIs(t, err, ErrSnapshotMismatch)
	// The right one resumes.
	out, err := r.Run(ctx, mod, Spec{Args: []string{"a"}, Resume: snap})
	require.NoError(t, err)
	require.Equal(t, KindSucceeded, out.Kind, out.Message)
	require.Equal(t, 24, bytes.Count(out.Stdout, []byte("\n")))
}

// FuzzDecodeSnapshot: any bytes decode to a snapshot or an error, never
// a panic; what decodes encodes again to what decodes the same.
func FuzzDecodeSnapshot(f *testing.F) {
	r, err := New(context.Background(), Config{Resumable: true})
	require.NoError(f, err)
	defer func() { _ = r.Close(context.Background()) }()
	_, snap := suspendedCounter(f, r)
	var buf bytes.Buffer
	require.NoError(f, snap.Encode(&buf))
	good := bytes.Clone(buf.Bytes())
	f.Add(good)
	_, err = snap.EncodeDelta(&buf, snap.digest()) // a delta that changes nothing
	require.NoError(f, err)
	f.Add(buf.Bytes())
	f.Add(buf.Bytes()[:len(good)+20])
	f.Add(good[:len(good)/2])
	f.Add([]byte(snapshotMagic))
	f.Add(append([]byte(snapshotMagic), 1, 0, 0, 0, 0xff, 0xff))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSnapshot(bytes.NewReader(b))
		if err != nil {
			return
		}
		var again bytes.Buffer
		require.NoError(t, s.Encode(&again))
		s2, err := DecodeSnapshot(&again)
		require.NoError(t, err)
		require.Equal(t, s, s2)
	})
}

// TestBackgroundSnapshots takes a snapshot at nearly every interrupt
// (Spec.SnapshotEvery of a nanosecond) while each guest runs on: its
// output is byte-identical to a run without them, and a run resumed from
// any of them (encoded, in a fresh Runtime) finishes with the same output.
// snapshotPointsOf is how many interrupts apart TestBackgroundSnapshots
// takes its snapshots: a few dozen over each guest's run.
// (go-primes calls the interrupt function about 220,000 times, real-lua
// 340,000, once per rewrite.InterruptBudget units).
var snapshotPointsOf = map[string]int{"go-primes": 5000, "real-lua": 7500}

func TestBackgroundSnapshots(t *testing.T) {
	ctx := context.Background()
	for _, c := range resumeCases(t) {
		if c.name != "go-primes" && c.name != "real-lua" {
			continue // two guests that run long enough for many
		}
		t.Run(c.name, func(t *testing.T) {
			want, _ := runSuspended(t, c, nil)
			require.Equal(t, KindSucceeded, want.Kind, want.Message)
			r := resumableRuntime(t)
			mod, err := r.Compile(ctx, c.wasm)
			require.NoError(t, err)
			var kept []*Snapshot
			taken := 0
			// By count, not by time: as many snapshots on a slow machine
			// (the race detector, under load) as on a quick one.
			spec := Spec{Input: c.stdin, Args: c.args, Limits: Limits{MemoryBytes: 256 << 20, Timeout: 10 * time.Minute}, snapshotPoints: snapshotPointsOf[c.name],
				OnSnapshot: func(s *Snapshot) {
					if taken%4 == 0 {
						kept = append(kept, s)
					}
					taken++
				}}
			got, err := r.Run(ctx, mod, spec)
			require.NoError(t, err)
			require.Equal(t, KindSucceeded, got.Kind, got.Message)
			require.True(t, bytes.Equal(want.Stdout, got.Stdout), "stdout differs with %d background snapshots", taken)
			require.True(t, bytes.Equal(want.Stderr, got.Stderr))
			require.NotEmpty(t, kept, "no snapshot was taken")
			t.Logf("%d background snapshots, %d kept", taken, len(kept))
			// Each kept snapshot as a delta after the one before: the chain
			// decodes, at each length, as the last snapshot encoded whole.
			var chain bytes.Buffer
			digest, err := kept[0].EncodeDelta(&chain, nil) // whole
			require.NoError(t, err)
			for i, s := range kept[1:] {
				before := chain.Len()
				digest, err = s.EncodeDelta(&chain, digest)
				require.NoError(t, err)
				var whole bytes.Buffer
				require.NoError(t, s.Encode(&whole))
				wholeSize := whole.Len()
				fromChain, err := DecodeSnapshot(bytes.NewReader(chain.Bytes()))
				require.NoError(t, err, "the chain of %d records", i+2)
				fromWhole, err := DecodeSnapshot(&whole)
				require.NoError(t, err)
				require.Equal(t, fromWhole, fromChain, "the chain of %d records", i+2)
				if i == 0 {
					t.Logf("a delta of %d bytes, the whole snapshot %d bytes", chain.Len()-before, wholeSize)
				}
			}
			kept[len(kept)-1], err = DecodeSnapshot(&chain) // resumed from below
			require.NoError(t, err)
			for i, s := range []*Snapshot{kept[0], kept[len(kept)/2], kept[len(kept)-1]} {
				var buf bytes.Buffer
				require.NoError(t, s.Encode(&buf))
				snap, err := DecodeSnapshot(&buf)
				require.NoError(t, err)
				r2 := resumableRuntime(t)
				mod2, err := r2.Compile(ctx, c.wasm)
				require.NoError(t, err)
				out, err := r2.Run(ctx, mod2, Spec{Input: c.stdin, Args: c.args, Resume: snap, Limits: Limits{MemoryBytes: 256 << 20}})
				require.NoError(t, err)
				require.Equal(t, want.Kind, out.Kind, "resumed from kept snapshot %d: %s", i, out.Message)
				require.True(t, bytes.Equal(want.Stdout, out.Stdout), "resumed from kept snapshot %d: stdout differs", i)
			}
		})
	}
}

// TestDamagedSnapshotNeverSucceeds changes one saved frame value at a
// time of a suspended counter to a value no site or local would hold:
// each run resumed from it ends (no hang, no panic), and one that is not
// led back to where the snapshot left it is a trap wrapping
// ErrSnapshotMismatch, never a success of code that never ran. Some
// value (the site to resume at) must be caught so after the guest
// returned (rewindEnded); other values change what the guest computes
// (a local), and one runs out of frames or traps in a prologue.
func TestDamagedSnapshotNeverSucceeds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := resumableRuntime(t)
	mod, snap := suspendedCounter(t, r)
	caught := 0
	for i := range snap.frames {
		bad := *snap
		bad.frames = slices.Clone(snap.frames)
		bad.frames[i] = 0x7fff_fff0
		out, err := r.Run(ctx, mod, Spec{Args: []string{"a"}, Resume: &bad, Limits: Limits{Timeout: time.Minute}})
		require.NoError(t, err)
		if errors.Is(out.Err, ErrSnapshotMismatch) {
			require.Equal(t, KindTrapped, out.Kind, out.Message)
			if strings.Contains(out.Message, "before it was back where the snapshot left it") {
				caught++ // rewindEnded: without it, the run succeeded
			}
		}
		require.NotEqual(t, KindTimedOut, out.Kind, "frame value %d: %s", i, out.Message)
	}
	require.NotZero(t, caught, "no damaged frame value was caught")
	t.Logf("%d of %d frame values caught", caught, len(snap.frames))
}

// TestResumeAfterContextEnded: a resumed run whose hard context has ended
// before its guest starts (a timeout under load, while it read back the
// stdin its guest had read) is forced, not a panic out of Run.
func TestResumeAfterContextEnded(t *testing.T) {
	t.Parallel()
	c := resumeCases(t)[1] // go-hello: it reads its stdin
	require.Equal(t, "go-hello", c.name)
	ctx := context.Background()
	r := resumableRuntime(t)
	mod, err := r.Compile(ctx, c.wasm)
	require.NoError(t, err)
	ch := make(chan struct{})
	close(ch)
	var out *Outcome
	for after := 5; ; after *= 2 {
		out, err = r.Run(ctx, mod, Spec{Input: c.stdin, Suspend: ch, suspendAfter: after})
		require.NoError(t, err)
		require.Equal(t, KindSuspended, out.Kind, "after %d interrupts: %s", after, out.Message)
		if out.Snapshot.stdinRead > 0 {
			break
		}
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	out, err = r.Run(ended, mod, Spec{Input: c.stdin, Resume: out.Snapshot})
	require.NoError(t, err)
	require.Equal(t, KindForced, out.Kind, out.Message)
}

// TestSuspendAsleep: a guest asleep in poll_oneoff for an hour (the
// sleep fixture; the Go sleeper, through Go's scheduler) is suspended
// inside its sleep, by the caller and for background snapshots, each of
// which keeps what is left of the sleep; resumed, the call is made again
// and sleeps only that (here cut to a millisecond, the guest's clock moved
// on by the rest, so that a resumed guest that slept its whole hour again
// would end timed_out instead).
func TestSuspendAsleep(t *testing.T) {
	for _, c := range []struct {
		name         string
		wasm         []byte
		asleep, woke string // its stderr once asleep, its stdout once awake
	}{
		{"wat", wat.MustLoad("sleep"), "sleep\n", ""},
		{"go", readFile(t, testwasm.GoGuest(t, "sleeper")), "sleeper: sleeping\n", "sleeper: woke up\n"},
	} {
		t.Run(c.name, func(t *testing.T) { testSuspendAsleep(t, c.wasm, c.asleep, c.woke) })
	}
}

func testSuspendAsleep(t *testing.T, wasm []byte, asleep, woke string) {
	ctx := context.Background()
	r := resumableRuntime(t)
	mod, err := r.Compile(ctx, wasm)
	require.NoError(t, err)
	require.True(t, mod.Resumable())
	require.True(t, mod.hostPoints, "its sleeps are not points")

	// Background snapshots, due at once and again at once: the guest
	// unwinds out of its sleep for each and goes back to sleep; the
	// caller's suspension ends the run after the third.
	suspend := make(chan struct{})
	var taken []*Snapshot
	out, err := r.Run(ctx, mod, Spec{Suspend: suspend, SnapshotEvery: time.Nanosecond, Limits: Limits{Timeout: time.Hour + time.Minute},
		OnSnapshot: func(s *Snapshot) {
			if s.sleepLeft < 0 {
				return // not asleep (yet): a Go guest has points before its sleep
			}
			if taken = append(taken, s); len(taken) == 3 {
				close(suspend)
			}
		}})
	require.NoError(t, err)
	require.Equal(t, KindSuspended, out.Kind, out.Message)
	require.Len(t, taken, 3)
	left := int64(time.Hour)
	for i, s := range append(taken, out.Snapshot) {
		require.Equal(t, asleep, string(s.stderr), "snapshot %d", i)
		require.Greater(t, s.sleepLeft, int64(0), "snapshot %d was not taken asleep", i)
		require.LessOrEqual(t, s.sleepLeft, left, "snapshot %d: more of the sleep left than before", i)
		left = s.sleepLeft
	}

	// Resumed through its encoding, and suspended again inside the call
	// made again.
	resume := func(s *Snapshot, spec Spec) *Outcome {
		t.Helper()
		var buf bytes.Buffer
		require.NoError(t, s.Encode(&buf))
		snap, err := DecodeSnapshot(&buf)
		require.NoError(t, err)
		require.Equal(t, s.sleepLeft, snap.sleepLeft)
		spec.Resume = snap
		out, err := r.Run(ctx, mod, spec)
		require.NoError(t, err)
		return out
	}
	closed := make(chan struct{})
	close(closed)
	again := resume(out.Snapshot, Spec{Suspend: closed})
	require.Equal(t, KindSuspended, again.Kind, again.Message)
	require.LessOrEqual(t, again.Snapshot.sleepLeft, left)
	require.Greater(t, again.Snapshot.sleepLeft, int64(0))

	// What is left, cut short, as if it had passed (the guest's clock
	// moved on by the rest: Go's scheduler sleeps again until its timer
	// is due by that clock): the guest wakes and exits 0.
	again.Snapshot.clock += again.Snapshot.sleepLeft - int64(time.Millisecond)
	again.Snapshot.sleepLeft = int64(time.Millisecond)
	done := resume(again.Snapshot, Spec{Limits: Limits{Timeout: 2 * time.Minute}})
	require.Equal(t, KindSucceeded, done.Kind, done.Message)
	require.Equal(t, asleep, string(done.Stderr))
	require.Equal(t, woke, string(done.Stdout))
}

// TestSuspendWithReadOnlyMount: readloop (C, knows nothing of Stint)
// reads files under a read-only mount round after round; suspended at
// random interrupts (each suspension waits for a point where it holds no
// file open) and resumed from an encoded snapshot in a fresh Runtime, it
// prints what its uninterrupted run prints. A snapshot given with other
// mounts is refused; with a writable mount the run does not suspend,
// unless the mount accepts snapshots.
func TestSuspendWithReadOnlyMount(t *testing.T) {
	wasm, err := ckernels.Build(testwasm.CacheDir(t), "readloop")
	if err != nil {
		require.ErrorIs(t, err, ckernels.ErrUnavailable)
		t.Skip(err)
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 9))
	for i := range 8 {
		b := make([]byte, 6000+rng.IntN(6000))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("file.%d", i)), b, 0o644))
	}
	ctx := context.Background()
	mounts := []Mount{{HostPath: dir, GuestPath: "/data"}}
	run := func(r *Runtime, snap *Snapshot, suspendAfter int, mounts []Mount) (*Outcome, error) {
		mod, err := r.Compile(ctx, wasm)
		require.NoError(t, err)
		require.True(t, mod.resumable)
		spec := Spec{Input: []byte("12"), Args: []string{"/data"}, Mounts: mounts, Resume: snap}
		if suspendAfter >= 0 {
			ch := make(chan struct{})
			close(ch)
			spec.Suspend, spec.suspendAfter = ch, suspendAfter
		}
		return r.Run(ctx, mod, spec)
	}
	want, err := run(resumableRuntime(t), nil, -1, mounts)
	require.NoError(t, err)
	require.Equal(t, KindSucceeded, want.Kind, want.Message)
	require.Equal(t, 12, bytes.Count(want.Stdout, []byte("\n")))
	require.NotContains(t, string(want.Stdout), "errno")

	for trial := range 3 {
		after := []int{rng.IntN(20), rng.IntN(60), rng.IntN(5)}
		var snap *Snapshot
		var out *Outcome
		runs := 0
		for {
			a := -1
			if runs < len(after) {
				a = after[runs]
			}
			runs++
			out, err = run(resumableRuntime(t), snap, a, mounts)
			require.NoError(t, err)
			if out.Kind != KindSuspended {
				break
			}
			var buf bytes.Buffer
			require.NoError(t, out.Snapshot.Encode(&buf))
			snap, err = DecodeSnapshot(&buf)
			require.NoError(t, err)
			if trial == 0 && runs == 1 {
				// Other mounts: refused, nothing applied.
				_, err := run(resumableRuntime(t), snap, -1, []Mount{{HostPath: dir, GuestPath: "/elsewhere"}})
				require.ErrorIs(t, err, ErrSnapshotMismatch)
			}
		}
		require.Equal(t, KindSucceeded, out.Kind, "trial %d (%v): %s", trial, after, out.Message)
		require.Equal(t, string(want.Stdout), string(out.Stdout), "trial %d (%v)", trial, after)
		require.Greater(t, runs, 1, "trial %d (%v): never suspended", trial, after)
	}

	// A writable mount: the guest is not suspended, it runs to its end;
	// unless the mount accepts snapshots.
	out, err := run(resumableRuntime(t), nil, 0, []Mount{{HostPath: dir, GuestPath: "/data", Writable: true}})
	require.NoError(t, err)
	require.Equal(t, KindSucceeded, out.Kind, out.Message)
	require.Equal(t, string(want.Stdout), string(out.Stdout))
	accepting := []Mount{{HostPath: dir, GuestPath: "/data", Writable: true, Snapshots: true}}
	out, err = run(resumableRuntime(t), nil, 0, accepting)
	require.NoError(t, err)
	require.Equal(t, KindSuspended, out.Kind, out.Message)
	out, err = run(resumableRuntime(t), out.Snapshot, -1, accepting)
	require.NoError(t, err)
	require.Equal(t, KindSucceeded, out.Kind, out.Message)
	require.Equal(t, string(want.Stdout), string(out.Stdout))
}

// readsCounted is a stdin that tells reads: each Read, as it begins,
// sends how many began before it.
type readsCounted struct {
	r     io.Reader
	n     int
	began chan int
}

func (c *readsCounted) Read(p []byte) (int, error) {
	c.began <- c.n
	c.n++
	return c.r.Read(p)
}

// TestSuspendReadingStdin: echo (copies stdin to stdout) blocked reading a
// pipe is suspended inside its read, not once the read returns; resumed
// from its encoded snapshot, it reads on from where it was. And with
// background snapshots due again and again while it waits, the guest
// unwinds out of the read for each and makes the call again, and the
// bytes that arrive meanwhile are not lost.
func TestSuspendReadingStdin(t *testing.T) {
	ctx := context.Background()
	r := resumableRuntime(t)
	mod, err := r.Compile(ctx, wat.MustLoad("echo"))
	require.NoError(t, err)
	require.True(t, mod.Resumable())
	require.True(t, mod.hostPoints, "its reads are not points")

	pr, pw := io.Pipe()
	defer pw.Close() // ends the read left waiting
	in := &readsCounted{r: pr, began: make(chan int, 8)}
	suspend := make(chan struct{})
	go func() {
		require.Equal(t, 0, <-in.began)
		_, _ = pw.Write([]byte("hello\n")) // returns once the first read has it
		require.Equal(t, 1, <-in.began)    // echo wrote it and reads again
		close(suspend)
	}()
	out, err := r.Run(ctx, mod, Spec{Stdin: in, Suspend: suspend, Limits: Limits{Timeout: time.Minute}})
	require.NoError(t, err)
	require.Equal(t, KindSuspended, out.Kind, out.Message)
	require.Equal(t, "hello\n", string(out.Stdout))
	require.Equal(t, int64(6), out.Snapshot.stdinRead)

	var buf bytes.Buffer
	require.NoError(t, out.Snapshot.Encode(&buf))
	snap, err := DecodeSnapshot(&buf)
	require.NoError(t, err)
	done, err := r.Run(ctx, mod, Spec{Resume: snap, Stdin: strings.NewReader("hello\nworld\n")})
	require.NoError(t, err)
	require.Equal(t, KindSucceeded, done.Kind, done.Message)
	require.Equal(t, "hello\nworld\n", string(done.Stdout))

	// In place: snapshots due at once, again and again, while it waits.
	pr2, pw2 := io.Pipe()
	var waiting int
	taken := make(chan struct{})
	go func() {
		_, _ = pw2.Write([]byte("hello\n"))
		<-taken
		_, _ = pw2.Write([]byte("world\n"))
		_ = pw2.Close()
	}()
	out, err = r.Run(ctx, mod, Spec{Stdin: pr2, SnapshotEvery: time.Nanosecond, Limits: Limits{Timeout: time.Minute},
		OnSnapshot: func(s *Snapshot) {
			if s.stdinRead == 6 && string(s.stdout) == "hello\n" {
				if waiting++; waiting == 3 {
					close(taken)
				}
			}
		}})
	require.NoError(t, err)
	require.Equal(t, KindSucceeded, out.Kind, out.Message)
	require.GreaterOrEqual(t, waiting, 3)
	require.Equal(t, "hello\nworld\n", string(out.Stdout))
}

// TestSuspendReadingSecondIovec: a guest whose fd_read filled its first
// iovec and waits in its second is not suspended there (the bytes the
// first took are in its memory, and a call made again would read past
// them): it suspends at the next call's read, once this one returns, and
// resumed it loses and repeats nothing.
func TestSuspendReadingSecondIovec(t *testing.T) {
	ctx := context.Background()
	r := resumableRuntime(t)
	mod, err := r.Compile(ctx, wat.MustLoad("echo2"))
	require.NoError(t, err)
	require.True(t, mod.Resumable())

	pr, pw := io.Pipe()
	defer pw.Close()
	in := &readsCounted{r: pr, began: make(chan int, 8)}
	suspend := make(chan struct{})
	go func() {
		require.Equal(t, 0, <-in.began)
		_, _ = pw.Write([]byte("abcd")) // fills the first iovec
		require.Equal(t, 1, <-in.began) // the second iovec's read waits
		close(suspend)
		_, _ = pw.Write([]byte("efgh"))
	}()
	out, err := r.Run(ctx, mod, Spec{Stdin: in, Suspend: suspend, Limits: Limits{Timeout: time.Minute}})
	require.NoError(t, err)
	require.Equal(t, KindSuspended, out.Kind, out.Message)
	require.Equal(t, "abcdefgh", string(out.Stdout))
	require.Equal(t, int64(8), out.Snapshot.stdinRead)

	done, err := r.Run(ctx, mod, Spec{Resume: out.Snapshot, Stdin: strings.NewReader("abcdefghijkl")})
	require.NoError(t, err)
	require.Equal(t, KindSucceeded, done.Kind, done.Message)
	require.Equal(t, "abcdefghijkl", string(done.Stdout))
}
