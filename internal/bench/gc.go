package bench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// gcSetting is one garbage-collector configuration: GOGC as a percentage
// (-1 for off) and a soft memory limit in bytes (math.MaxInt64 for none).
type gcSetting struct {
	label   string
	percent int
	limit   int64
}

// gcSettings are the configurations GC compares; the default comes first
// and is the base of the ratios.
var gcSettings = []gcSetting{
	{"GOGC=100 (default)", 100, math.MaxInt64},
	{"GOGC=50", 50, math.MaxInt64},
	{"GOGC=200", 200, math.MaxInt64},
	{"GOGC=400", 400, math.MaxInt64},
	{"GOGC=off, GOMEMLIMIT=256MiB", -1, 256 << 20},
}

// apply sets s as the process's GC configuration (what the GOGC and
// GOMEMLIMIT environment variables set at start) and returns the previous.
func (s gcSetting) apply() gcSetting {
	prev := gcSetting{percent: debug.SetGCPercent(s.percent)}
	prev.limit = debug.SetMemoryLimit(s.limit)
	return prev
}

// GC measures Stint's sandbox.Runtime.Run under several GOGC and GOMEMLIMIT
// settings, changed at run time between rounds in one process (rounds
// rotate the settings): per-task latency on one goroutine, tasks/s on
// every core, GC cycles per 1000 tasks and peak RSS.
func GC(ctx context.Context, o Options) (*Result, error) {
	res := &Result{Name: "gc"}
	hello, err := goGuest(o, "hello")
	if err != nil {
		return nil, err
	}
	rt, err := sandbox.New(ctx, sandbox.Config{CacheDir: filepath.Join(o.CacheDir, "wazero", "stint")})
	if err != nil {
		return nil, err
	}
	defer rt.Close(ctx)

	guests := []guestCase{
		{name: "noop", wasm: wat.MustLoad("noop"), samples: o.pick(2000, 200)},
		{name: "hello (Go)", wasm: hello, input: []byte("hello, stint\n"), samples: o.pick(80, 10)},
	}
	rounds := o.pick(3, 1)
	round := o.pickDur(time.Second, 300*time.Millisecond)
	prev := gcSettings[0].apply()
	defer prev.apply()

	tab := res.NewTable("Garbage collector settings: Stint sandbox.Runtime.Run",
		"guest", "setting", "p50 µs", "p99 µs", "median tasks/s (2 goroutines)", "tasks/s vs default",
		"GC cycles / 1000 tasks", "peak RSS MiB (median of rounds)", "rounds")
	for _, g := range guests {
		mod, err := rt.Compile(ctx, g.wasm)
		if err != nil {
			return nil, err
		}
		run := func(ctx context.Context) error {
			out, err := rt.Run(ctx, mod, sandbox.Spec{Input: g.input})
			if err == nil && !out.Success() {
				err = fmt.Errorf("stint run: %s", out)
			}
			return err
		}
		type perSetting struct{ lat, tput, gcs, rss *Series }
		st := make([]perSetting, len(gcSettings))
		for i := range gcSettings {
			key := "gc/" + g.name + "/" + strconv.Itoa(i)
			st[i] = perSetting{res.NewSeries(key+"/latency", "ns"), res.NewSeries(key+"/tput", "tasks/s"),
				res.NewSeries(key+"/gc-per-1000", "cycles"), res.NewSeries(key+"/rss", "MiB")}
		}
		idx := make([]int, len(gcSettings))
		for i := range idx {
			idx[i] = i
		}
		o.logf("gc: %s, %d rounds of %d settings", g.name, rounds, len(gcSettings))
		for r := 0; r < rounds; r++ {
			for _, i := range rotate(idx, r) {
				gcSettings[i].apply()
				runtime.GC()
				debug.FreeOSMemory()
				resetPeakRSS()
				for n := -max(g.samples/20, 2); n < g.samples; n++ {
					start := time.Now()
					if err := run(ctx); err != nil {
						return nil, err
					}
					if n >= 0 {
						st[i].lat.AddDuration(time.Since(start))
					}
				}
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				rate, err := throughput(ctx, round, 2, run)
				if err != nil {
					return nil, err
				}
				runtime.ReadMemStats(&after)
				st[i].tput.Values = append(st[i].tput.Values, rate)
				tasksRun := rate * round.Seconds()
				st[i].gcs.Values = append(st[i].gcs.Values, float64(after.NumGC-before.NumGC)/tasksRun*1000)
				if rss, ok := peakRSS(); ok {
					st[i].rss.Values = append(st[i].rss.Values, float64(rss)/(1<<20))
				}
			}
		}
		gcSettings[0].apply()
		for i, s := range gcSettings {
			rss := "n/a"
			if st[i].rss.N() > 0 {
				rss = fmt.Sprintf("%.0f", st[i].rss.Median())
			}
			tab.AddRow(g.name, s.label, us(st[i].lat.Median()), us(st[i].lat.P99()), num(st[i].tput.Median()),
				ratio(st[i].tput.Median(), st[0].tput.Median()), fmt.Sprintf("%.1f", st[i].gcs.Median()), rss,
				fmt.Sprint(st[i].tput.N()))
		}
	}
	tab.Notes = append(tab.Notes, fmt.Sprintf(
		"One process, GOMAXPROCS=%d; the settings are applied with debug.SetGCPercent and debug.SetMemoryLimit (what the "+
			"GOGC and GOMEMLIMIT environment variables set), rounds rotate them. Each round: runtime.GC and debug.FreeOSMemory, "+
			"reset of the peak RSS (/proc/self/clear_refs), %d noop or %d hello tasks timed one at a time (p50/p99 pooled over "+
			"rounds), then tasks/s on 2 goroutines for %s (GC cycles counted there), then VmHWM, the peak RSS of the round.",
		runtime.GOMAXPROCS(0), guests[0].samples, guests[1].samples, round))
	return res, nil
}

// resetPeakRSS resets the process's VmHWM to its current RSS, where Linux
// allows it (a no-op elsewhere).
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS returns VmHWM from /proc/self/status, in bytes.
func peakRSS() (int64, bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, false
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
