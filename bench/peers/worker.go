package main

// Worker mode: `peers -worker ENGINE ...` runs one in-process engine and
// answers line-delimited JSON commands on stdin with one JSON line each on
// stdout. The orchestrator (main.go) runs every engine, the Go ones and the
// Python and Node scripts, behind this same protocol, so the engines can be
// interleaved (A B C A B C ...) and each has its own process and peak RSS.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// request is one command. Ops:
//
//	lat   run N tasks of Guest one after the other; reply ns per task
//	tput  Par workers run tasks of Guest back to back for MS milliseconds;
//	      reply the tasks completed and the wall time until the last ended
//	stop  N times: start a stuck guest, wait until it runs, hard-cancel it;
//	      reply ns from the cancel to the blocked call's return
//	mem   reply VmRSS and VmHWM in KiB (of the process tree, for Python)
//	reset_hwm  reset VmHWM (echo 5 > /proc/self/clear_refs)
//	quit
type request struct {
	Op    string `json:"op"`
	Guest string `json:"guest,omitempty"`
	N     int    `json:"n,omitempty"`
	MS    int    `json:"ms,omitempty"`
	Par   int    `json:"par,omitempty"`
}

type reply struct {
	Ready   bool    `json:"ready,omitempty"`
	Error   string  `json:"error,omitempty"`
	NS      []int64 `json:"ns,omitempty"`
	Recover []int64 `json:"recover_ns,omitempty"`
	Tasks   int64   `json:"tasks,omitempty"`
	Elapsed int64   `json:"elapsed_ns,omitempty"`
	RSSKB   int64   `json:"rss_kb,omitempty"`
	HWMKB   int64   `json:"hwm_kb,omitempty"`
	SetupMS float64 `json:"setup_ms,omitempty"`
	Info    string  `json:"info,omitempty"`
	Note    string  `json:"note,omitempty"`
}

// taskFunc runs one task to completion and checks its output.
type taskFunc func() error

// engine is one in-process WebAssembly engine under test.
type engine interface {
	// setup compiles the guests; it is not timed as per-task cost.
	setup(ctx context.Context, g guests) error
	// newTask returns a task runner for one worker goroutine: per-goroutine
	// state (temp files, linkers) is made here, outside the timed loop.
	newTask(guest string) (taskFunc, func(), error)
	// stop runs one stuck guest, waits until it is running, cancels it
	// hard and returns the time from the cancel to the call's return.
	stop() (time.Duration, error)
	info() string
	close()
}

// guests are the guest modules and the input given to each task.
type guests struct {
	noop, hello, loop []byte
	primes, data8m    []byte // guests.go
	input             []byte
	want              []byte // hello's expected stdout
}

func loadGuests(noopPath, helloPath, loopPath, primesPath string) (guests, error) {
	var g guests
	var err error
	if g.noop, err = os.ReadFile(noopPath); err != nil {
		return g, err
	}
	if g.hello, err = os.ReadFile(helloPath); err != nil {
		return g, err
	}
	if g.primes, err = os.ReadFile(primesPath); err != nil {
		return g, err
	}
	g.data8m = data8mGuest()
	if g.loop, err = os.ReadFile(loopPath); err != nil {
		return g, err
	}
	g.input = []byte(taskInput)
	g.want = bytes.ToUpper(g.input)
	return g, nil
}

// taskInput is every task's stdin (the noop guest does not read it).
const taskInput = "hello, stint: the quick brown fox jumps over the lazy dog\n"

func newEngine(name string) (engine, error) {
	switch name {
	case "stint":
		return &stintEngine{}, nil
	case "wazero":
		return &wazeroEngine{}, nil
	case "extism":
		return &extismEngine{}, nil
	case "wasmtime":
		return &wasmtimeEngine{}, nil
	}
	return nil, fmt.Errorf("unknown engine %q", name)
}

func runWorker(name, noopPath, helloPath, loopPath, primesPath string) error {
	out := json.NewEncoder(os.Stdout)
	send := func(r reply) {
		if err := out.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, "worker: write:", err)
			os.Exit(1)
		}
	}
	start := time.Now()
	e, err := newEngine(name)
	if err == nil {
		var g guests
		if g, err = loadGuests(noopPath, helloPath, loopPath, primesPath); err == nil {
			err = e.setup(context.Background(), g)
		}
	}
	if err != nil {
		send(reply{Error: "setup: " + err.Error()})
		return err
	}
	setup := time.Since(start)
	// Leave the compiler's garbage out of the steady-state RSS.
	runtime.GC()
	debug.FreeOSMemory()
	rss, hwm := memStatus(os.Getpid())
	send(reply{Ready: true, SetupMS: float64(setup.Microseconds()) / 1000, RSSKB: rss, HWMKB: hwm,
		Info: fmt.Sprintf("%s; go %s GOGC=%s GOMAXPROCS=%d", e.info(), runtime.Version(),
			os.Getenv("GOGC"), runtime.GOMAXPROCS(0))})

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			send(reply{Error: "bad request: " + err.Error()})
			continue
		}
		switch req.Op {
		case "quit":
			stopProfile()
			e.close()
			send(reply{})
			return nil
		case "mem":
			rss, hwm := memStatus(os.Getpid())
			send(reply{RSSKB: rss, HWMKB: hwm})
		case "reset_hwm":
			if err := resetHWM(os.Getpid()); err != nil {
				send(reply{Error: err.Error()})
			} else {
				send(reply{})
			}
		case "lat":
			ns, err := latency(e, req.Guest, req.N)
			send(errReply(reply{NS: ns}, err))
		case "tput":
			startProfile(name)
			n, el, err := throughput(e, req.Guest, req.Par, time.Duration(req.MS)*time.Millisecond)
			send(errReply(reply{Tasks: n, Elapsed: el.Nanoseconds()}, err))
		case "stop":
			var ns []int64
			var err error
			for range req.N {
				var d time.Duration
				if d, err = e.stop(); err != nil {
					break
				}
				ns = append(ns, d.Nanoseconds())
			}
			send(errReply(reply{NS: ns}, err))
		default:
			send(reply{Error: "unknown op " + req.Op})
		}
	}
	return in.Err()
}

func errReply(r reply, err error) reply {
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

func latency(e engine, guest string, n int) ([]int64, error) {
	task, done, err := e.newTask(guest)
	if err != nil {
		return nil, err
	}
	defer done()
	ns := make([]int64, 0, n)
	for range n {
		t0 := time.Now()
		if err := task(); err != nil {
			return ns, err
		}
		ns = append(ns, time.Since(t0).Nanoseconds())
	}
	return ns, nil
}

// throughput runs par goroutines, each running tasks back to back until
// the window ends; elapsed runs until the last task in flight has ended.
func throughput(e engine, guest string, par int, window time.Duration) (int64, time.Duration, error) {
	if par < 1 {
		par = 1
	}
	tasks := make([]taskFunc, par)
	for i := range tasks {
		t, done, err := e.newTask(guest)
		if err != nil {
			return 0, 0, err
		}
		defer done()
		tasks[i] = t
	}
	var count atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, par)
	start := time.Now()
	end := start.Add(window)
	for i := range par {
		wg.Go(func() {
			for time.Now().Before(end) {
				if err := tasks[i](); err != nil {
					errs[i] = err
					return
				}
				count.Add(1)
			}
		})
	}
	wg.Wait()
	return count.Load(), time.Since(start), errors.Join(errs...)
}

// memStatus reads VmRSS and VmHWM (KiB) of pid.
func memStatus(pid int) (rss, hwm int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1, -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v
		case "VmHWM:":
			hwm = v
		}
	}
	return rss, hwm
}

// resetHWM resets the peak RSS of pid to its current RSS.
func resetHWM(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// signalWriter closes ch on the first write (the stuck guest's "loop\n"
// on stderr says it is running) and discards everything.
type signalWriter struct {
	once sync.Once
	ch   chan struct{}
}

func newSignalWriter() *signalWriter { return &signalWriter{ch: make(chan struct{})} }

func (w *signalWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.ch) })
	return len(p), nil
}

var _ io.Writer = (*signalWriter)(nil)

// checkOut checks a task's stdout.
func checkOut(g *guests, guest string, got []byte) error {
	if guest == "hello" && !bytes.Equal(got, g.want) {
		return fmt.Errorf("hello: stdout %q, want %q", got, g.want)
	}
	if guest == "primes" && string(got) != primesWant {
		return fmt.Errorf("primes: stdout %q, want %q", got, primesWant)
	}
	if (guest == "noop" || guest == "data8m") && len(got) != 0 {
		return fmt.Errorf("noop: unexpected stdout %q", got)
	}
	return nil
}

// waitStarted waits for the stuck guest's first write, or fails after 10 s.
func waitStarted(ch <-chan struct{}, done <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-done:
		return errors.New("stuck guest returned before it was cancelled")
	case <-time.After(10 * time.Second):
		return errors.New("stuck guest did not start within 10s")
	}
}

// timeStop runs call, a stuck guest's run, on a goroutine and, once
// started is closed (the guest runs), stops it (stop) and returns how long
// call took to return after that, and what it returned; err is
// waitStarted's.
func timeStop(started <-chan struct{}, stop func(), call func() error) (d time.Duration, callErr, err error) {
	done := make(chan error, 1)
	go func() { done <- call() }()
	if err := waitStarted(started, nil); err != nil {
		return 0, nil, err
	}
	t0 := time.Now()
	stop()
	callErr = <-done
	return time.Since(t0), callErr, nil
}

// profiles holds what a worker records of its tasks/s rounds, for a
// profile of one engine under the peers' own load (bench/peers/README.md):
// PEERS_CPUPROFILE=FILE (%s: the engine) writes a CPU profile there from
// the first tasks/s round to the end; PEERS_MUTEX=1 adds FILE.mutex and
// FILE.block, PEERS_TRACE=1 an execution trace, FILE.trace.
var profiles struct {
	path  string
	cpu   *os.File
	trace *os.File
	locks bool
}

// startProfile starts the profiles asked for, once.
func startProfile(engine string) {
	path := os.Getenv("PEERS_CPUPROFILE")
	if path == "" || profiles.path != "" {
		return
	}
	profiles.path = strings.ReplaceAll(path, "%s", engine)
	f, err := os.Create(profiles.path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker: CPU profile:", err)
	} else {
		profiles.cpu = f
	}
	if os.Getenv("PEERS_MUTEX") != "" {
		profiles.locks = true
		runtime.SetMutexProfileFraction(1)
		runtime.SetBlockProfileRate(1)
	}
	if os.Getenv("PEERS_TRACE") != "" {
		f, err := os.Create(profiles.path + ".trace")
		if err == nil {
			err = trace.Start(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "worker: trace:", err)
		} else {
			profiles.trace = f
		}
	}
}

// stopProfile ends the profiles and writes the lock profiles.
func stopProfile() {
	if profiles.cpu != nil {
		pprof.StopCPUProfile()
		_ = profiles.cpu.Close()
	}
	if profiles.trace != nil {
		trace.Stop()
		_ = profiles.trace.Close()
	}
	if profiles.locks {
		for _, p := range []string{"mutex", "block"} {
			f, err := os.Create(profiles.path + "." + p)
			if err == nil {
				err = errors.Join(pprof.Lookup(p).WriteTo(f, 0), f.Close())
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "worker:", p, "profile:", err)
			}
		}
	}
}
