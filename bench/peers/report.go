package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
)

type machineInfo struct {
	CPU     string `json:"cpu"`
	Cores   int    `json:"cores"`
	MemMB   int64  `json:"mem_mb"`
	Kernel  string `json:"kernel"`
	Go      string `json:"go"`
	Python  string `json:"python"`
	Node    string `json:"node"`
	LoadAvg string `json:"loadavg_at_start"`
}

func describeMachine() machineInfo {
	m := machineInfo{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:"), "%d", &kb)
		m.MemMB = kb / 1024
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	if out, err := exec.Command("python3", "--version").Output(); err == nil {
		m.Python = strings.TrimSpace(strings.TrimPrefix(string(out), "Python "))
	}
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		m.Node = strings.TrimSpace(string(out))
	}
	return m
}

// pct is the nearest-rank percentile p (0-100) of xs (NaN if empty).
func pct(xs []int64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return float64(s[max(0, min(i, len(s)-1))])
}

func medianF(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func flatten(rs [][]int64) []int64 {
	var all []int64
	for _, r := range rs {
		all = append(all, r...)
	}
	return all
}

// pairedRatio is the median over rounds of a[r]/b[r], both figures taken in
// the same interleaved round (so slow phases of a noisy machine cancel out).
func pairedRatio(a, b []float64) float64 {
	var rs []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 && !math.IsNaN(a[i]) && !math.IsNaN(b[i]) {
			rs = append(rs, a[i]/b[i])
		}
	}
	return medianF(rs)
}

func roundP(rs [][]int64, p float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = pct(r, p)
	}
	return out
}

func fmtNS(ns float64) string {
	switch {
	case math.IsNaN(ns):
		return "–"
	case ns >= 10e6:
		return fmt.Sprintf("%.1f ms", ns/1e6)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 100e3:
		return fmt.Sprintf("%.0f µs", ns/1e3)
	case ns >= 10e3:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	default:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	}
}

func fmtRatio(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "–"
	}
	if r >= 100 {
		return fmt.Sprintf("%.0f×", r)
	}
	if r >= 10 {
		return fmt.Sprintf("%.1f×", r)
	}
	return fmt.Sprintf("%.2f×", r)
}

func fmtMB(kb int64) string {
	if kb <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f MiB", float64(kb)/1024)
}

func ratio(a, b float64) float64 {
	if b <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}

const baseKey, wasmtimeKey = "wazero", "wasmtime"

func guestLabel(key, g string) string {
	if key == "python" || key == "node" {
		if g == "noop" {
			return "noop (fn returning nothing)"
		}
		return "hello (fn upper-casing its input)"
	}
	switch g {
	case "noop":
		return "noop.wasm"
	case "primes":
		return "primes.wasm (Go)"
	case "data8m":
		return "data8m (8 MiB data)"
	}
	return "hello.wasm (Go)"
}

func renderMarkdown(res *results, o options) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	eng := func(k string) *engineData { return res.Engines[k] }
	has := func(k string) bool { d := res.Engines[k]; return d != nil && d.Error == "" }

	m := res.Machine
	p("Date: %s. Command: `cd bench/peers && %s`.\n\n", res.Date, res.Command)
	p("Machine: %s, %d cores, %d MiB RAM, Linux %s, load average at start %s (shared and noisy: read the ratios, not the absolute times). "+
		"%s, Python %s, Node %s. Every Go peer runs with GOGC=%s and GOMAXPROCS=%d, each engine in its own process.\n\n",
		m.CPU, m.Cores, m.MemMB, m.Kernel, m.LoadAvg, m.Go, m.Python, m.Node, o.gogc, m.Cores)
	p("Parameters: %d interleaved rounds (engines in the order %s, every round); %d per-task samples per engine and guest; "+
		"tasks/s over %d ms windows with %d parallel workers; %d stop samples per engine. Guests: `noop.wasm` (%d bytes of wasm, exits at once), "+
		"`hello.wasm` (the Go `wasm-examples/hello` guest, %d bytes, upper-cases its %d-byte stdin), `loop.wasm` (spins forever) for stop latency; "+
		"for Stint, bare wazero and wasmtime-go also `primes.wasm` (the Go `wasm-examples/primes` guest, %d bytes, stdin %q; the peers get stubs of the `stint` imports) and "+
		"`data8m` (a generated module with %d MiB of initialized data that checks a byte in every 64 KiB of it, grows its memory 2 pages and writes over what it checked).\n\n",
		o.rounds, strings.Join(res.Order, ", "), o.n, o.window.Milliseconds(), o.par, o.stopN,
		fileSize(o.noopPath), fileSize(o.helloPath), len(taskInput), fileSize(o.primesPath), primesInput, data8mSize>>20)

	for _, k := range res.Order {
		if d := eng(k); d.Error != "" {
			p("**%s failed**: %s\n\n", d.Name, strings.ReplaceAll(d.Error, "\n", " "))
		}
	}

	// Per-task cost.
	p("#### Per-task cost, one task at a time (submit to result)\n\n")
	p("| engine | guest | p50 | p99 | p50 vs bare wazero | p50 vs wasmtime-go | p99 vs bare wazero | p99 vs wasmtime-go |\n")
	p("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, g := range guestNames {
		for _, k := range res.Order {
			if !has(k) || len(eng(k).Lat[g]) == 0 {
				continue
			}
			d := eng(k)
			all := flatten(d.Lat[g])
			p50, p99 := pct(all, 50), pct(all, 99)
			row := []string{d.Name, guestLabel(k, g), fmtNS(p50), fmtNS(p99)}
			for _, base := range []string{baseKey, wasmtimeKey} {
				r := math.NaN()
				if has(base) {
					r = pairedRatio(roundP(d.Lat[g], 50), roundP(eng(base).Lat[g], 50))
				}
				row = append(row, fmtRatio(r))
			}
			for _, base := range []string{baseKey, wasmtimeKey} {
				r := math.NaN()
				if has(base) {
					r = ratio(p99, pct(flatten(eng(base).Lat[g]), 99))
				}
				row = append(row, fmtRatio(r))
			}
			p("| %s |\n", strings.Join(row, " | "))
		}
	}
	p("\np50 and p99 over all samples of all rounds; the p50 ratios are the median over rounds of the ratio of the two engines' p50 in the same round, the p99 ratios are of the pooled p99s. Lower is better.\n\n")

	// Tasks/s.
	p("#### Tasks per second on all cores (%d workers, back to back)\n\n", o.par)
	p("| engine | guest | tasks/s (median of rounds) | min – max | vs bare wazero | vs wasmtime-go |\n")
	p("| --- | --- | ---: | ---: | ---: | ---: |\n")
	for _, g := range guestNames {
		for _, k := range res.Order {
			if !has(k) || len(eng(k).Tput[g]) == 0 {
				continue
			}
			d := eng(k)
			ts := d.Tput[g]
			lo, hi := math.NaN(), math.NaN()
			if len(ts) > 0 {
				lo, hi = slices.Min(ts), slices.Max(ts)
			}
			row := []string{d.Name, guestLabel(k, g), fmt.Sprintf("%.0f", medianF(ts)), fmt.Sprintf("%.0f – %.0f", lo, hi)}
			for _, base := range []string{baseKey, wasmtimeKey} {
				r := math.NaN()
				if has(base) {
					r = pairedRatio(ts, eng(base).Tput[g])
				}
				row = append(row, fmtRatio(r))
			}
			p("| %s |\n", strings.Join(row, " | "))
		}
	}
	p("\nRatios are medians over rounds of the same-round ratio. Higher is better. Go engines: %d goroutines; Python: %d submitting threads over a pool of %d processes; Node: %d worker threads.\n\n", o.par, o.par, o.par, o.par)

	// Stop latency.
	p("#### Stop latency of a stuck guest (hard cancel → the blocked call returns)\n\n")
	p("| engine | hard cancel | p50 | p99 | max | p50 vs bare wazero | p50 vs wasmtime-go | p99 vs bare wazero | p99 vs wasmtime-go | then ready again |\n")
	p("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	how := map[string]string{
		"stint":    "cancel the Run's ctx (close-on-context-done)",
		"wazero":   "cancel the call's ctx (close-on-context-done)",
		"extism":   "cancel CallWithContext's ctx",
		"wasmtime": "Engine.IncrementEpoch (epoch deadline 1)",
		"python":   "future.cancel() fails → terminate() (→ kill() after 1 s)",
		"node":     "worker.terminate()",
	}
	for _, k := range res.Order {
		if !has(k) {
			continue
		}
		d := eng(k)
		all := flatten(d.Stop)
		p50, p99 := pct(all, 50), pct(all, 99)
		row := []string{d.Name, how[k], fmtNS(p50), fmtNS(p99), fmtNS(pct(all, 100))}
		for _, base := range []string{baseKey, wasmtimeKey} {
			r := math.NaN()
			if has(base) {
				r = pairedRatio(roundP(d.Stop, 50), roundP(eng(base).Stop, 50))
			}
			row = append(row, fmtRatio(r))
		}
		for _, base := range []string{baseKey, wasmtimeKey} {
			r := math.NaN()
			if has(base) {
				r = ratio(p99, pct(flatten(eng(base).Stop), 99))
			}
			row = append(row, fmtRatio(r))
		}
		rec := "at once"
		if len(d.Recover) > 0 {
			rec = "p50 " + fmtNS(pct(d.Recover, 50))
		}
		row = append(row, rec)
		p("| %s |\n", strings.Join(row, " | "))
	}
	p("\nThe clock starts when the stuck guest has shown it runs (its first write) and the host issues the hard cancel, and stops when the call blocked on the guest returns. " +
		"\"Then ready again\": the Wasm engines need nothing rebuilt; a Python pool is broken by a terminated worker (p50 of building a new pool and getting a first result), a Node worker must be started again (p50 of a new Worker's first reply).")
	for _, k := range res.Order {
		if d := eng(k); d != nil && len(d.StopNotes) > 0 {
			p(" %s: %s.", d.Name, summarizeNotes(d.StopNotes))
		}
	}
	p("\n\n")

	// Memory.
	p("#### Memory (peak RSS, each engine in its own process)\n\n")
	p("| engine | setup (compile the guests) | RSS after setup | peak RSS incl. setup | peak RSS while running tasks | peak (tasks) vs bare wazero | peak (tasks) vs wasmtime-go |\n")
	p("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, k := range res.Order {
		if !has(k) {
			continue
		}
		d := eng(k)
		row := []string{d.Name, fmt.Sprintf("%.0f ms", d.SetupMS), fmtMB(d.SetupRSSKB), fmtMB(d.SetupHWMKB), fmtMB(d.TasksHWMKB)}
		for _, base := range []string{baseKey, wasmtimeKey} {
			r := math.NaN()
			if has(base) {
				r = ratio(float64(d.TasksHWMKB), float64(eng(base).TasksHWMKB))
			}
			row = append(row, fmtRatio(r))
		}
		p("| %s |\n", strings.Join(row, " | "))
	}
	p("\nVmHWM from /proc/PID/status. \"Peak incl. setup\" is the peak up to the end of setup (compilation included; Go engines run a GC and return freed memory to the OS before \"RSS after setup\"); "+
		"\"while running tasks\" is VmHWM after a reset (`echo 5 > /proc/PID/clear_refs`) at the end of setup, read after all latency and tasks/s rounds, before the stop tests. "+
		"Python: sum over the parent and its %d pool processes (forked, so shared pages count more than once: an upper bound). Node: the one process, worker threads included. "+
		"Python and Node setup is starting the pool or the workers, no compilation.\n", o.par)
	if len(res.Warnings) > 0 {
		p("\nWarnings: %s\n", strings.Join(res.Warnings, "; "))
	}
	return b.String()
}

func summarizeNotes(notes []string) string {
	// Python notes are "terminate() sufficed a/b, kill() needed c/b" per round; sum them.
	var ok, killed, total int
	for _, n := range notes {
		var a, b, c, d int
		if _, err := fmt.Sscanf(n, "terminate() sufficed %d/%d, kill() needed %d/%d", &a, &b, &c, &d); err == nil {
			ok, killed, total = ok+a, killed+c, total+b
		} else {
			return strings.Join(notes, "; ")
		}
	}
	return fmt.Sprintf("terminate() sufficed in %d of %d samples, kill() was needed in %d", ok, total, killed)
}

func renderCSV(res *results) string {
	var b strings.Builder
	b.WriteString("engine,metric,guest,p50,p99,median,unit\n")
	for _, k := range res.Order {
		d := res.Engines[k]
		if d.Error != "" {
			continue
		}
		for _, g := range guestNames {
			if len(d.Lat[g]) == 0 {
				continue
			}
			all := flatten(d.Lat[g])
			fmt.Fprintf(&b, "%s,task_cost,%s,%.0f,%.0f,,ns\n", k, g, pct(all, 50), pct(all, 99))
			fmt.Fprintf(&b, "%s,tasks_per_s,%s,,,%.1f,tasks/s\n", k, g, medianF(d.Tput[g]))
		}
		st := flatten(d.Stop)
		fmt.Fprintf(&b, "%s,stop_latency,loop,%.0f,%.0f,,ns\n", k, pct(st, 50), pct(st, 99))
		fmt.Fprintf(&b, "%s,rss_after_setup,,,,%d,KiB\n", k, d.SetupRSSKB)
		fmt.Fprintf(&b, "%s,peak_rss_setup,,,,%d,KiB\n", k, d.SetupHWMKB)
		fmt.Fprintf(&b, "%s,peak_rss_tasks,,,,%d,KiB\n", k, d.TasksHWMKB)
	}
	return b.String()
}
