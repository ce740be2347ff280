package sandbox

import (
	"bytes"
	"math"
	"os"
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
// encoded size, decoding it:
//
//	go test ./sandbox -run XXX -bench BenchmarkResumableInterleaved -benchtime 10x [-args -interrupt.shapes REGEXP]
func BenchmarkResumableInterleaved(b *testing.B) {
	resumable := len(interruptVariants) - 1
	require.True(b, interruptVariants[resumable].resumable)
	variants := []int{checksVariant, resumable}
	type program struct {
		name string
		run  [2]func() (float64, string)
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
	logSum := 0.0
	for p, prog := range progs {
		r := median(ratios[p])
		logSum += math.Log(r)
		b.ReportMetric(r, prog.name+"-resumable-x")
		b.ReportMetric(median(ms[p][0]), prog.name+"-checks-ms")
		b.ReportMetric(median(ms[p][1]), prog.name+"-resumable-ms")
	}
	if len(progs) > 0 {
		b.ReportMetric(math.Exp(logSum/float64(len(progs))), "geomean-resumable-x")
	}
	snapshotCosts(b)
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
