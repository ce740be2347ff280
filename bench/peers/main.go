// Command peers compares Stint's sandbox with its peers: bare wazero (the
// baseline), the Extism Go SDK, wasmtime-go, a Python ProcessPoolExecutor and
// Node worker_threads. It measures the per-task cost of a trivial task, tasks
// per second on all cores, the time to stop a stuck guest and peak RSS, and
// prints Markdown tables. See README.md for what each engine measures.
//
// Every engine runs in its own process (this binary re-executed with
// -worker, or the Python and Node scripts), so each has its own RSS; the
// engines are driven over a small line-delimited JSON protocol (worker.go)
// and interleaved, A B C A B C, so that the noise of a shared machine falls
// on all of them alike.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// engineSpec is one peer: its display name and how to start its worker.
type engineSpec struct {
	Key, Name string
	Go        bool // a Go engine, run as this binary with -worker Key
	Argv      []string
	// AllGuests: the engine runs every guest of guestNames; the others
	// run noop and hello only (Python and Node have their own equivalents
	// of those two, Extism runs plugins).
	AllGuests bool
}

// runs reports whether the engine runs guest g.
func (s engineSpec) runs(g string) bool { return s.AllGuests || g == "noop" || g == "hello" }

var allEngines = []engineSpec{
	{Key: "stint", Name: "Stint sandbox", Go: true, AllGuests: true},
	{Key: "wazero", Name: "bare wazero", Go: true, AllGuests: true},
	{Key: "extism", Name: "Extism go-sdk", Go: true},
	{Key: "wasmtime", Name: "wasmtime-go", Go: true, AllGuests: true},
	{Key: "python", Name: "Python ProcessPool", Argv: []string{"python3", "scripts/pool.py"}},
	{Key: "node", Name: "Node worker_threads", Argv: []string{"node", "scripts/worker_threads.js"}},
}

var guestNames = []string{"noop", "hello", "primes", "data8m"}

// selectGuests narrows guestNames to the comma-separated list (all if "").
func selectGuests(list string) error {
	if list == "" {
		return nil
	}
	var sel []string
	for _, g := range strings.Split(list, ",") {
		g = strings.TrimSpace(g)
		found := false
		for _, n := range guestNames {
			found = found || n == g
		}
		if !found {
			return fmt.Errorf("-guests: no guest %q (have %s)", g, strings.Join(guestNames, ","))
		}
		sel = append(sel, g)
	}
	guestNames = sel
	return nil
}

type options struct {
	out          string
	quick        bool
	n            int
	stopN        int
	rounds       int
	window       time.Duration
	par          int
	gogc         string
	repo         string
	scripts      string
	helloPath    string
	primesPath   string
	engines      string
	commandLine  string
	noopPath     string
	loopPath     string
	helloBuildMS float64
}

func main() {
	var (
		worker                 = flag.String("worker", "", "internal: run one Go engine as a worker process")
		wNoop, wHello, wLoop   string
		wPrimes                string
		o                      options
		windowMS, stopN, nFlag int
	)
	flag.StringVar(&wNoop, "noop", "", "internal: noop guest path (worker mode)")
	flag.StringVar(&wHello, "hello", "", "hello guest (.wasm); default: built from the repository's wasm-examples/hello")
	flag.StringVar(&wLoop, "loop", "", "internal: loop guest path (worker mode)")
	flag.StringVar(&wPrimes, "primes", "", "primes guest (.wasm); default: built from the repository's wasm-examples/primes")
	flag.StringVar(&o.out, "out", "", "directory for raw results (JSON, CSV, Markdown); none if empty")
	flag.BoolVar(&o.quick, "quick", false, "smoke run, under a minute")
	flag.IntVar(&nFlag, "n", 0, "per-task latency samples per engine and guest (default 4000, quick 150)")
	flag.IntVar(&stopN, "stop-n", 0, "stop-latency samples per engine (default 200, quick 15)")
	flag.IntVar(&o.rounds, "rounds", 0, "interleaved rounds (default 20, quick 3)")
	flag.IntVar(&windowMS, "window", 0, "throughput window per engine, guest and round in ms (default 400, quick 150)")
	flag.IntVar(&o.par, "par", runtime.NumCPU(), "parallel workers for tasks/s (goroutines, threads or processes)")
	flag.StringVar(&o.gogc, "gogc", "100", "GOGC for every Go peer")
	flag.StringVar(&o.repo, "repo", "../..", "Stint repository root")
	flag.StringVar(&o.scripts, "scripts", "scripts", "directory of pool.py and worker_threads.js")
	flag.StringVar(&o.engines, "engines", "", "comma-separated subset of stint,wazero,extism,wasmtime,python,node")
	guestsFlag := flag.String("guests", "", "comma-separated subset of noop,hello,primes,data8m (default all; noop alone keeps the Go guests' garbage out of the no-op row)")
	flag.Parse()

	if *pluginsBench || *pdkOnly || *pdkHTTPOnly {
		if err := runPluginBench(); err != nil { // plugins.go
			fmt.Fprintln(os.Stderr, "plugins:", err)
			os.Exit(1)
		}
		return
	}
	if *worker != "" {
		if err := runWorker(*worker, wNoop, wHello, wLoop, wPrimes); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		return
	}
	if err := selectGuests(*guestsFlag); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(2)
	}
	o.helloPath, o.primesPath = wHello, wPrimes
	o.n, o.stopN, o.window = 4000, 200, 400*time.Millisecond
	if o.quick {
		o.n, o.stopN, o.window = 150, 15, 150*time.Millisecond
	}
	if o.rounds == 0 {
		o.rounds = 20
		if o.quick {
			o.rounds = 3
		}
	}
	if nFlag > 0 {
		o.n = nFlag
	}
	if stopN > 0 {
		o.stopN = stopN
	}
	if windowMS > 0 {
		o.window = time.Duration(windowMS) * time.Millisecond
	}
	o.commandLine = "go run . " + strings.Join(os.Args[1:], " ")
	if err := orchestrate(o); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// workerProc is one engine's running worker.
type workerProc struct {
	spec   engineSpec
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *strings.Builder
	ready  reply
	err    error // set once the worker failed; the engine is then skipped
}

func startWorker(spec engineSpec, o options) *workerProc {
	w := &workerProc{spec: spec, stderr: &strings.Builder{}}
	var cmd *exec.Cmd
	if spec.Go {
		exe, err := os.Executable()
		if err != nil {
			w.err = err
			return w
		}
		cmd = exec.Command(exe, "-worker", spec.Key, "-noop", o.noopPath, "-hello", o.helloPath, "-loop", o.loopPath, "-primes", o.primesPath)
		cmd.Env = append(os.Environ(), "GOGC="+o.gogc)
	} else {
		argv := append([]string(nil), spec.Argv...)
		argv[1] = filepath.Join(o.scripts, filepath.Base(argv[1]))
		cmd = exec.Command(argv[0], argv[1:]...)
	}
	cmd.Stderr = &lockedWriter{b: w.stderr}
	in, err := cmd.StdinPipe()
	if err != nil {
		w.err = err
		return w
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		w.err = err
		return w
	}
	if err := cmd.Start(); err != nil {
		w.err = err
		return w
	}
	w.cmd, w.in = cmd, in
	w.out = bufio.NewScanner(outp)
	w.out.Buffer(make([]byte, 1<<20), 64<<20)
	return w
}

type lockedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 1<<16 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (w *workerProc) read() (reply, error) {
	if !w.out.Scan() {
		err := w.out.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return reply{}, fmt.Errorf("%s: worker ended: %v; stderr: %s", w.spec.Key, err, w.stderr.String())
	}
	var r reply
	if err := json.Unmarshal(w.out.Bytes(), &r); err != nil {
		return r, fmt.Errorf("%s: bad reply %q: %w", w.spec.Key, w.out.Bytes(), err)
	}
	if r.Error != "" {
		return r, fmt.Errorf("%s: %s", w.spec.Key, r.Error)
	}
	return r, nil
}

// call sends req and waits for the reply. A failed worker stays failed.
func (w *workerProc) call(req request) (reply, error) {
	if w.err != nil {
		return reply{}, w.err
	}
	b, _ := json.Marshal(req)
	if _, err := w.in.Write(append(b, '\n')); err != nil {
		w.err = fmt.Errorf("%s: write: %w; stderr: %s", w.spec.Key, err, w.stderr.String())
		return reply{}, w.err
	}
	type result struct {
		r   reply
		err error
	}
	ch := make(chan result, 1)
	go func() { r, err := w.read(); ch <- result{r, err} }()
	select {
	case res := <-ch:
		if res.err != nil {
			w.err = res.err
		}
		return res.r, res.err
	case <-time.After(callTimeout):
		_ = w.cmd.Process.Kill()
		w.err = fmt.Errorf("%s: no reply to %s within %s (killed); stderr: %s", w.spec.Key, req.Op, callTimeout, w.stderr.String())
		return reply{}, w.err
	}
}

// callTimeout bounds one command, so that a hung engine cannot hang the run.
const callTimeout = 2 * time.Minute

func (w *workerProc) quit() {
	if w.cmd == nil {
		return
	}
	if w.err == nil {
		_, _ = w.call(request{Op: "quit"})
	}
	_ = w.in.Close()
	done := make(chan struct{})
	go func() { _ = w.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = w.cmd.Process.Kill()
		<-done
	}
}

// results holds every raw sample, for the JSON output and the tables.
type results struct {
	Date     string                 `json:"date"`
	Command  string                 `json:"command"`
	Machine  machineInfo            `json:"machine"`
	Params   map[string]any         `json:"params"`
	Engines  map[string]*engineData `json:"engines"`
	Order    []string               `json:"order"`
	Warnings []string               `json:"warnings,omitempty"`
}

type engineData struct {
	Name    string  `json:"name"`
	Info    string  `json:"info"`
	Error   string  `json:"error,omitempty"`
	SetupMS float64 `json:"setup_ms"`
	// RSS after setup (compiled modules resident, GC run for Go engines),
	// the peak RSS of the whole life up to then (compilation included),
	// and the peak RSS while running tasks (VmHWM reset after setup).
	SetupRSSKB   int64 `json:"setup_rss_kb"`
	SetupHWMKB   int64 `json:"setup_hwm_kb"`
	TasksHWMKB   int64 `json:"tasks_hwm_kb"`
	TasksRSSKB   int64 `json:"tasks_rss_kb"`
	MemResetWork bool  `json:"hwm_reset_ok"`
	// Per guest: per round, the per-task latencies (ns) and tasks/s.
	Lat  map[string][][]int64 `json:"lat_ns"`
	Tput map[string][]float64 `json:"tasks_per_s"`
	// Per round: stop latencies (ns) and recovery times (ns).
	Stop      [][]int64 `json:"stop_ns"`
	Recover   []int64   `json:"recover_ns,omitempty"`
	StopNotes []string  `json:"stop_notes,omitempty"`
}

func orchestrate(o options) error {
	start := time.Now()
	specs := allEngines
	if o.engines != "" {
		specs = nil
		for _, k := range strings.Split(o.engines, ",") {
			found := false
			for _, s := range allEngines {
				if s.Key == strings.TrimSpace(k) {
					specs = append(specs, s)
					found = true
				}
			}
			if !found {
				return fmt.Errorf("unknown engine %q", k)
			}
		}
	}
	repo, err := filepath.Abs(o.repo)
	if err != nil {
		return err
	}
	o.noopPath = filepath.Join(repo, "internal/testwasm/wat/noop.wasm")
	o.loopPath = filepath.Join(repo, "internal/testwasm/wat/loop.wasm")
	for _, b := range []struct {
		path *string
		name string
	}{{&o.helloPath, "hello"}, {&o.primesPath, "primes"}} {
		if *b.path != "" {
			continue
		}
		dir, err := os.MkdirTemp("", "peers-"+b.name+"-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*b.path = filepath.Join(dir, b.name+".wasm")
		t0 := time.Now()
		cmd := exec.Command("go", "build", "-trimpath", "-o", *b.path, "./wasm-examples/"+b.name)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building the %s guest: %v\n%s", b.name, err, out)
		}
		if b.name == "hello" {
			o.helloBuildMS = float64(time.Since(t0).Milliseconds())
		}
	}
	for _, p := range []string{o.noopPath, o.loopPath, o.helloPath, o.primesPath} {
		if _, err := os.Stat(p); err != nil {
			return err
		}
	}
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
	}

	res := &results{
		Date:    time.Now().UTC().Format(time.RFC3339),
		Command: o.commandLine,
		Machine: describeMachine(),
		Params: map[string]any{
			"n": o.n, "stop_n": o.stopN, "rounds": o.rounds, "window_ms": o.window.Milliseconds(),
			"par": o.par, "gogc": o.gogc, "quick": o.quick, "hello_wasm_bytes": fileSize(o.helloPath),
			"input_bytes": len(taskInput),
		},
		Engines: map[string]*engineData{},
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "[%5.1fs] "+format+"\n", append([]any{time.Since(start).Seconds()}, a...)...)
	}

	// Start the workers one after the other (setup compiles, and parallel
	// compilations on 2 cores would distort each other's setup time).
	workers := make([]*workerProc, 0, len(specs))
	for _, s := range specs {
		logf("starting %s", s.Key)
		w := startWorker(s, o)
		d := &engineData{Name: s.Name, Lat: map[string][][]int64{}, Tput: map[string][]float64{}}
		res.Engines[s.Key] = d
		res.Order = append(res.Order, s.Key)
		if w.err == nil {
			w.ready, w.err = w.read()
		}
		if w.err == nil {
			d.Info, d.SetupMS = w.ready.Info, w.ready.SetupMS
			d.SetupRSSKB, d.SetupHWMKB = w.ready.RSSKB, w.ready.HWMKB
			_, err := w.call(request{Op: "reset_hwm"})
			d.MemResetWork = err == nil
			if err != nil {
				w.err = nil // the reset is optional
				res.Warnings = append(res.Warnings, s.Key+": cannot reset VmHWM: "+err.Error())
			}
		}
		workers = append(workers, w)
	}
	defer func() {
		for _, w := range workers {
			w.quit()
		}
	}()
	fail := func(w *workerProc) {
		if d := res.Engines[w.spec.Key]; d.Error == "" && w.err != nil {
			d.Error = w.err.Error()
			logf("%s failed: %v", w.spec.Key, w.err)
		}
	}
	for _, w := range workers {
		fail(w)
	}

	// Warm up: a few tasks of each kind, discarded.
	for _, w := range workers {
		for _, g := range guestNames {
			if !w.spec.runs(g) {
				continue
			}
			_, _ = w.call(request{Op: "lat", Guest: g, N: 20})
			_, _ = w.call(request{Op: "tput", Guest: g, MS: 50, Par: o.par})
		}
		fail(w)
	}

	// Interleaved rounds: per-task latency, then tasks/s.
	perRound := max(1, o.n/o.rounds)
	for r := range o.rounds {
		logf("round %d/%d: latency (%d tasks per engine and guest), tasks/s (%s windows)", r+1, o.rounds, perRound, o.window)
		for _, g := range guestNames {
			for _, w := range workers {
				if !w.spec.runs(g) {
					continue
				}
				rep, err := w.call(request{Op: "lat", Guest: g, N: perRound})
				if err != nil {
					fail(w)
					continue
				}
				d := res.Engines[w.spec.Key]
				d.Lat[g] = append(d.Lat[g], rep.NS)
			}
		}
		for _, g := range guestNames {
			for _, w := range workers {
				if !w.spec.runs(g) {
					continue
				}
				rep, err := w.call(request{Op: "tput", Guest: g, MS: int(o.window.Milliseconds()), Par: o.par})
				if err != nil {
					fail(w)
					continue
				}
				d := res.Engines[w.spec.Key]
				d.Tput[g] = append(d.Tput[g], float64(rep.Tasks)/(float64(rep.Elapsed)/1e9))
			}
		}
	}
	// Peak RSS while running tasks, before the stop tests (those start and
	// break pools and workers).
	for _, w := range workers {
		if rep, err := w.call(request{Op: "mem"}); err == nil {
			d := res.Engines[w.spec.Key]
			d.TasksHWMKB, d.TasksRSSKB = rep.HWMKB, rep.RSSKB
		}
		fail(w)
	}
	// Interleaved stop-latency rounds.
	stopRounds := min(o.rounds, o.stopN)
	perStop := max(1, o.stopN/stopRounds)
	for r := range stopRounds {
		logf("stop round %d/%d (%d stuck guests per engine)", r+1, stopRounds, perStop)
		for _, w := range workers {
			rep, err := w.call(request{Op: "stop", N: perStop})
			if err != nil {
				fail(w)
				continue
			}
			d := res.Engines[w.spec.Key]
			d.Stop = append(d.Stop, rep.NS)
			d.Recover = append(d.Recover, rep.Recover...)
			if rep.Note != "" {
				d.StopNotes = append(d.StopNotes, rep.Note)
			}
		}
	}
	logf("done")

	md := renderMarkdown(res, o)
	fmt.Print(md)
	if o.out != "" {
		raw, _ := json.MarshalIndent(res, "", " ")
		errs := []error{
			os.WriteFile(filepath.Join(o.out, "peers-raw.json"), raw, 0o644),
			os.WriteFile(filepath.Join(o.out, "peers.md"), []byte(md), 0o644),
			os.WriteFile(filepath.Join(o.out, "peers-summary.csv"), []byte(renderCSV(res)), 0o644),
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		logf("raw results in %s (peers-raw.json, peers-summary.csv, peers.md)", o.out)
	}
	return nil
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// depVersion is the version of a module this binary was built with.
func depVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				if d.Replace != nil && d.Replace.Version != "" {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return "?"
}

var wazeroVersion = depVersion("github.com/tetratelabs/wazero")
