package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Startup diagnostics (docs/operations.md, "Where a command's time goes"):
//
//   - STINT_CPUPROFILE=FILE writes a CPU profile of the whole command, from
//     main to exit, for `go tool pprof`. It is for measuring the runner
//     itself; it is not a configuration key.
//   - STINT_TRACE=FILE writes a Go execution trace of the whole command
//     (runtime/trace), for `go tool trace`: where goroutines wait (a
//     worker on claimed tasks, a completion on its round trip).
//   - In both file names, %p is replaced by the process id, so that
//     several runners started with the same environment write a file
//     each.
//   - At log.level debug, `runner run` logs "runner run phases": how long
//     each of its steps took (phases below), and the sandbox logs the
//     steps of a compilation ("module compiled").

// processInit is when the main package was initialized: every package the
// binary links has run its init by then (GODEBUG=inittrace=1 says how
// long they took).
var processInit = time.Now()

// cpuProfileEnv names the file the CPU profile is written to.
const cpuProfileEnv = "STINT_CPUPROFILE"

// startCPUProfile starts the CPU profile STINT_CPUPROFILE asks for; the
// returned function stops it and closes the file. A profile that cannot be
// started is reported on stderr and the command runs anyway.
func startCPUProfile() (stop func()) {
	return startDiag(cpuProfileEnv, func(f *os.File) error { return pprof.StartCPUProfile(f) }, pprof.StopCPUProfile)
}

// traceEnv names the file the execution trace is written to.
const traceEnv = "STINT_TRACE"

// startTrace starts the execution trace STINT_TRACE asks for, like
// startCPUProfile.
func startTrace() (stop func()) {
	return startDiag(traceEnv, func(f *os.File) error { return trace.Start(f) }, trace.Stop)
}

// startDiag creates the file the environment variable env names (%p: the
// process id) and starts writing to it; the returned function stops and
// closes it. An error is reported on stderr and the command runs anyway.
func startDiag(env string, start func(*os.File) error, end func()) (stop func()) {
	path := os.Getenv(env)
	if path == "" {
		return func() {}
	}
	path = strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid()))
	f, err := os.Create(path)
	if err == nil {
		err = start(f)
		if err != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "runner: %s: %v\n", env, err)
		return func() {}
	}
	return func() {
		end()
		_ = f.Close()
	}
}

// phases times the steps of a command for its debug log; it costs nothing
// when debug logging is off.
type phases struct {
	log    *zap.Logger // nil: off
	last   time.Time
	fields []zap.Field
}

// newPhases starts timing a command at the main package's
// initialization: its first steps are "cli" (cobra parsing the command
// line) and "config" (configuration and logger, setup), then each mark.
func (a *app) newPhases() *phases {
	if a.log == nil || !a.log.Core().Enabled(zapcore.DebugLevel) {
		return &phases{}
	}
	p := &phases{log: a.log, last: processInit}
	if !a.setupStart.IsZero() && !a.setupEnd.IsZero() {
		p.fields = append(p.fields, zap.Duration("cli", a.setupStart.Sub(processInit)),
			zap.Duration("config", a.setupEnd.Sub(a.setupStart)))
		p.last = a.setupEnd
	}
	return p
}

// mark ends the step named name: its duration is the time since the last
// mark (the first step starts at the main package's initialization).
func (p *phases) mark(name string) {
	if p.log == nil {
		return
	}
	now := time.Now()
	p.fields = append(p.fields, zap.Duration(name, now.Sub(p.last)))
	p.last = now
}

// done logs every step and the total since the main package's
// initialization.
func (p *phases) done(msg string) {
	if p.log == nil {
		return
	}
	p.fields = append(p.fields, zap.Duration("total_since_init", time.Since(processInit)))
	p.log.Debug(msg, p.fields...)
}
