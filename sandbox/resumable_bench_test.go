package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/internal/testwasm/ckernels"
)

// BenchmarkResumableInterleaved: what resumability costs, on whole
// programs (the C kernels, the Go guest primes, the corpus's Lua, SQLite
// shell and zstd), against the same module with the same checks but not
// resumable ("checks"), the two run back to back in turn, thread CPU time.
// Reported per program: the median of the per-pair ratio resumable/checks
// and each variant's median ms; and the geometric mean of the ratios. It
// also reports, once, what a snapshot of a guest with 64 MiB of touched
// memory costs: taking it (pages read, kept), encoding it (S2), its
// encoded size, decoding it. With -resumable.asyncify it also measures the
// same technique as Binaryen builds it, a second implementation to set
// Stint's against, able to suspend where Stint's is: each program with the
// checks, made resumable by wasm-opt's Asyncify pass with the checks'
// interrupt call and the blocking host calls as its points, against the
// same checked program optimised alike (-O2), reported as program
// asyncify-NAME and in a geometric mean of its own:
//
//	go test ./sandbox -run XXX -bench BenchmarkResumableInterleaved -benchtime 10x [-args -interrupt.shapes REGEXP -resumable.asyncify]
func BenchmarkResumableInterleaved(b *testing.B) {
	resumable := len(interruptVariants) - 1
	require.True(b, interruptVariants[resumable].resumable)
	variants := []int{checksVariant, resumable}
	type program struct {
		name     string
		run      [2]func() (float64, string)
		asyncify bool // Binaryen's, not Stint's
	}
	var progs []program
	keep := shapeFilter(b) // -interrupt.shapes
	add := func(name string, wasm []byte, stdin string, args ...string) {
		if !keep(name) {
			return
		}
		p := program{name: name}
		for i, v := range variants {
			p.run[i] = commandRunner(b, wasm, v, stdin, args...)
		}
		progs = append(progs, p)
		if *withAsyncify {
			plain, async, err := asyncified(b, benchPrepare(b, wasm, checksVariant))
			if err != nil {
				b.Logf("%s: Asyncify is left out: %v", name, err)
				return
			}
			q := program{name: "asyncify-" + name, asyncify: true}
			q.run[0] = commandRunner(b, plain, noneVariant, stdin, args...)
			q.run[1] = commandRunner(b, async, noneVariant, stdin, args...)
			progs = append(progs, q)
		}
	}
	primes, err := os.ReadFile(testwasm.GoGuest(b, "primes"))
	require.NoError(b, err)
	add("go-primes", primes, "100000 1000000")
	for _, k := range ckernels.Kernels {
		wasm, err := ckernels.Build(testwasm.CacheDir(b), k.Name)
		if err != nil {
			b.Logf("the C kernels are left out: %v", err)
			break
		}
		add("c-"+k.Name, wasm, "")
	}
	if _, err := os.Stat(corpusDir); err == nil {
		read := func(name string) []byte {
			data, err := os.ReadFile(filepath.Join(corpusDir, name))
			require.NoError(b, err)
			return data
		}
		script := string(read("bench.lua"))
		add("real-lua", read("lua.wasm"), script, "lua", "-")
		add("real-sqlite", read("sqlite3.wasm"), string(read("sqlite-work.sql")), "sqlite3", ":memory:")
		add("real-zstd", read("zstd.wasm"), strings.Repeat(script, 40), "zstd", "-q", "-c", "-3")
	} else {
		b.Logf("the corpus is left out: %s is absent", corpusDir)
	}
	ratios := make([][]float64, len(progs))
	ms := make([][2][]float64, len(progs))
	runtime.LockOSThread() // threadCPU: this thread's
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	for i := range b.N {
		for p, prog := range progs {
			var t [2]float64
			var out [2]string
			for k := range 2 {
				v := (i + k) % 2
				t[v], out[v] = prog.run[v]()
			}
			if out[0] != out[1] {
				b.Fatalf("%s: resumable printed %q, checks %q", prog.name, out[1], out[0])
			}
			ratios[p] = append(ratios[p], t[1]/t[0])
			ms[p][0] = append(ms[p][0], t[0]/1e6)
			ms[p][1] = append(ms[p][1], t[1]/1e6)
		}
	}
	b.StopTimer()
	var logSum [2]float64 // Stint's, Asyncify's
	var n [2]int
	for p, prog := range progs {
		r := median(ratios[p])
		k := 0
		if prog.asyncify {
			k = 1
		}
		logSum[k] += math.Log(r)
		n[k]++
		b.ReportMetric(r, prog.name+"-resumable-x")
		b.ReportMetric(median(ms[p][0]), prog.name+"-checks-ms")
		b.ReportMetric(median(ms[p][1]), prog.name+"-resumable-ms")
	}
	for k, what := range []string{"geomean-resumable-x", "geomean-asyncify-x"} {
		if n[k] > 0 {
			b.ReportMetric(math.Exp(logSum[k]/float64(n[k])), what)
		}
	}
	snapshotCosts(b)
}

var withAsyncify = flag.Bool("resumable.asyncify", false,
	"BenchmarkResumableInterleaved: also each program made resumable by Binaryen's Asyncify (wasm-opt on PATH)")

// asyncifyArgs is how asyncified runs wasm-opt: Asyncify unwinding at the
// checks' interrupt call (where Stint's resumable code suspends) and at the
// host calls that can block (Stint's blocking imports), then the
// optimisation Binaryen says the pass needs; plainArgs optimises alike.
var (
	asyncifyArgs = []string{"--asyncify", "--pass-arg=asyncify-imports@" + interruptModule + "." + interruptFunc +
		",wasi_snapshot_preview1.fd_read,wasi_snapshot_preview1.poll_oneoff", "-O2"}
	plainArgs = []string{"-O2"}
)

// asyncified returns a checked module (wasm) optimised by wasm-opt
// (plainArgs) and made resumable by its Asyncify pass (asyncifyArgs), kept
// in testwasm's cache by the input's digest (the pass takes a minute on
// the SQLite shell).
func asyncified(b *testing.B, wasm []byte) (plain, async []byte, err error) {
	sum := sha256.Sum256(wasm)
	dir := testwasm.CacheDir(b)
	out := func(args []string) ([]byte, error) {
		key := sha256.Sum256([]byte(strings.Join(args, " ")))
		path := filepath.Join(dir, "wasm-opt-"+hex.EncodeToString(sum[:8])+"-"+hex.EncodeToString(key[:4])+".wasm")
		if data, err := os.ReadFile(path); err == nil {
			return data, nil
		}
		in := filepath.Join(b.TempDir(), "in.wasm")
		if err := os.WriteFile(in, wasm, 0o600); err != nil {
			return nil, err
		}
		features := []string{"--enable-bulk-memory", "--enable-sign-ext", "--enable-mutable-globals", "--enable-nontrapping-float-to-int"}
		if msg, err := exec.Command("wasm-opt", append(append([]string{in, "-o", path + ".tmp"}, features...), args...)...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("wasm-opt %s: %v: %s", strings.Join(args, " "), err, msg)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return nil, err
		}
		return os.ReadFile(path)
	}
	if plain, err = out(plainArgs); err != nil {
		return nil, nil, err
	}
	async, err = out(asyncifyArgs)
	return plain, async, err
}

// snapshotCosts reports what a snapshot of 64 MiB of touched memory costs.
func snapshotCosts(b *testing.B) {
	const pages = 64 << 20 / PageSize
	mem := make([]byte, pages*PageSize)
	x := uint64(1)
	for i := 0; i < len(mem); i += 8 { // half text-like, half random
		x = x*6364136223846793005 + 1442695040888963407
		if (i/PageSize)%2 == 0 {
			copy(mem[i:], "abcdefgh"[x>>61:])
		} else {
			for k := range 8 {
				mem[i+k] = byte(x >> (8 * k))
			}
		}
	}
	var take, enc, dec []float64
	var size int
	for range 5 {
		start := time.Now()
		s := &Snapshot{pages: pages, memory: map[uint32][]byte{}}
		for p := range uint32(pages) {
			page := mem[p*PageSize : (p+1)*PageSize]
			if !allZero(page) {
				s.memory[p] = bytes.Clone(page)
			}
		}
		take = append(take, float64(time.Since(start).Microseconds())/1e3)
		var buf bytes.Buffer
		start = time.Now()
		require.NoError(b, s.Encode(&buf))
		enc = append(enc, float64(time.Since(start).Microseconds())/1e3)
		size = buf.Len()
		start = time.Now()
		_, err := DecodeSnapshot(&buf)
		require.NoError(b, err)
		dec = append(dec, float64(time.Since(start).Microseconds())/1e3)
	}
	b.ReportMetric(median(take), "snapshot64MiB-take-ms")
	b.ReportMetric(median(enc), "snapshot64MiB-encode-ms")
	b.ReportMetric(float64(size)/(1<<20), "snapshot64MiB-encoded-MiB")
	b.ReportMetric(median(dec), "snapshot64MiB-decode-ms")
}
