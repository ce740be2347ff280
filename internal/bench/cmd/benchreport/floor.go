package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/stint-run/stint/internal/bench"
)

// floorVariants are BenchmarkNoopParts' sub-benchmarks (internal/bench),
// each with the guarantee it switches off.
var floorVariants = []struct{ name, what string }{
	{"stint", "Stint's Run, the zero Config: every guarantee"},
	{"no-watchdog", "without the stop watchdog (`Config.StopWatchdog` < 0)"},
	{"no-timeout", "without an attempt timeout (`Limits.Timeout` < 0; nothing to watch either)"},
	{"wazero-interrupt", "`InterruptWazero`: close-on-context-done instead of the loop checks"},
	{"bare-wazero", "bare wazero as bench/peers runs it (the baseline)"},
}

var benchLine = regexp.MustCompile(`^BenchmarkNoopParts/(\S+?)-\d+\s+\d+\s+([\d.]+) ns/op\s+([\d.]+) cpu-ns/op\s+(\d+) B/op\s+(\d+) allocs/op`)

// runFloor prices the parts of a no-op task: BenchmarkNoopParts in rounds
// (every variant once a round, so that they interleave), then a table of
// medians and of the median of same-round ratios to bare wazero.
func runFloor(quick bool, dir string) (string, string, error) {
	rounds, ops := 15, "30000x"
	if quick {
		rounds, ops = 3, "3000x"
	}
	bin := filepath.Join(dir, "bench.test")
	build := exec.Command("go", "test", "-c", "-o", bin, "./internal/bench")
	if out, err := build.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("go test -c: %v\n%s", err, out)
	}
	cmdline := fmt.Sprintf("go test -c ./internal/bench, then %d rounds of: bench.test -test.run '^$' -test.bench '^BenchmarkNoopParts$' -test.benchtime %s", rounds, ops)
	ns, cpu := map[string][]float64{}, map[string][]float64{}
	allocs := map[string]string{}
	var raw bytes.Buffer
	for range rounds {
		c := exec.Command(bin, "-test.run", "^$", "-test.bench", "^BenchmarkNoopParts$", "-test.benchtime", ops)
		c.Dir = "internal/bench"
		out, err := c.CombinedOutput()
		raw.Write(out)
		if err != nil {
			return "", "", fmt.Errorf("%s: %v\n%s", bin, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			m := benchLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			a, _ := strconv.ParseFloat(m[2], 64)
			b, _ := strconv.ParseFloat(m[3], 64)
			ns[m[1]] = append(ns[m[1]], a)
			cpu[m[1]] = append(cpu[m[1]], b)
			allocs[m[1]] = m[4] + " B, " + m[5] + " allocs"
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "floor-raw.txt"), raw.Bytes(), 0o644); err != nil {
		return "", "", err
	}
	base, baseCPU := ns["bare-wazero"], cpu["bare-wazero"]
	if len(base) != rounds {
		return "", "", fmt.Errorf("BenchmarkNoopParts: %d rounds of bare-wazero parsed, want %d", len(base), rounds)
	}
	var w strings.Builder
	fmt.Fprintf(&w, "#### The per-task floor, part by part (`BenchmarkNoopParts`, %d interleaved rounds of %s)\n\n", rounds, ops)
	fmt.Fprintf(&w, "| variant | ns/op (median) | vs bare wazero | CPU ns/op (median) | CPU vs bare wazero | memory per op |\n")
	fmt.Fprintf(&w, "| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, v := range floorVariants {
		if len(ns[v.name]) != rounds {
			return "", "", fmt.Errorf("BenchmarkNoopParts/%s: %d rounds parsed, want %d", v.name, len(ns[v.name]), rounds)
		}
		fmt.Fprintf(&w, "| %s: %s | %.0f | %.2f× | %.0f | %.2f× | %s |\n", v.name, v.what,
			median(ns[v.name]), medianRatio(ns[v.name], base), median(cpu[v.name]), medianRatio(cpu[v.name], baseCPU), allocs[v.name])
	}
	fmt.Fprintf(&w, "\nns/op is wall time per task, one goroutine; CPU ns/op is the process's user and system time per task (garbage collection included), which a busy machine inflates less. Ratios are medians over rounds of the same-round ratio. The difference between `stint` and a variant is what that guarantee costs a no-op task; the stdio slot, the memory budget and images, the stop checks at function entry and the call-stack budget cannot be switched off and are in every Stint row.\n")
	return w.String(), cmdline, nil
}

// median is xs's median (bench.Series.Median: the mean of the two middle
// values for an even count).
func median(xs []float64) float64 { return (&bench.Series{Values: xs}).Median() }

// medianRatio is the median of the ratios xs[i]/base[i].
func medianRatio(xs, base []float64) float64 {
	r := make([]float64, len(xs))
	for i := range xs {
		r[i] = xs[i] / base[i]
	}
	return median(r)
}
