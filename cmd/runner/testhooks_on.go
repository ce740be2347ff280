//go:build stint_testhooks

package main

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint/internal/testwasm/blockhost"
	"github.com/stint-run/stint/sandbox"
)

// testHostModules are the host modules of the end-to-end tests' build
// (go build -tags stint_testhooks, e2e/main_test.go): blockhost's
// stint_test.block, a host call that no forced stop ends, so that the
// tests can give the real runner a guest its watchdog must abandon. Never
// in a real runner: it lets a guest open any host path.
func testHostModules() []sandbox.HostModuleDef {
	return []sandbox.HostModuleDef{blockhost.Def()}
}

// batchHoldBytes is batch.Config.HoldBytes: the default (0), or
// STINT_TEST_BATCH_HOLD bytes when set: a test gives 0 to have every
// attempt read its input file (HoldBytes -1: none held).
func batchHoldBytes() int64 {
	if v, err := strconv.ParseInt(os.Getenv("STINT_TEST_BATCH_HOLD"), 10, 64); err == nil {
		if v <= 0 {
			return -1
		}
		return v
	}
	return 0
}

// testGC, when STINT_TEST_GC_EVERY is a duration, runs a garbage
// collection that often until ctx ends: an end-to-end test makes runner
// serve collect while a guest runs, as a busy runner does, so that a guest
// that holds up Go's stop-the-world shows as a runner that stops answering.
func testGC(ctx context.Context) {
	every, err := time.ParseDuration(os.Getenv("STINT_TEST_GC_EVERY"))
	if err != nil || every <= 0 {
		return
	}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				runtime.GC()
			}
		}
	}()
}

// testWedge, when STINT_TEST_WEDGE is "stw", freezes runner serve on
// SIGUSR2, for the systemd watchdog's end-to-end test
// (e2e/watchdog_e2e_test.go): a goroutine spins without a preemption
// point and a garbage collection waits for it to stop, so the world stays
// stopped and no goroutine runs again: no WATCHDOG=1, no /healthz answer,
// no heartbeat, as in a runner that a guest or a bug froze. Go preempts a
// spinning goroutine with a signal unless GODEBUG=asyncpreemptoff=1, so
// without that it refuses (and says so). It logs "wedging the runner on
// purpose" before it freezes. The returned func stops waiting for the
// signal.
func testWedge(log *zap.Logger) (stop func()) {
	if os.Getenv("STINT_TEST_WEDGE") != "stw" {
		return func() {}
	}
	if !strings.Contains(os.Getenv("GODEBUG"), "asyncpreemptoff=1") {
		log.Error("STINT_TEST_WEDGE=stw needs GODEBUG=asyncpreemptoff=1 (Go would preempt the spin): not wedging")
		return func() {}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR2)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-quit:
			return
		case <-sig:
		}
		log.Warn("wedging the runner on purpose (STINT_TEST_WEDGE=stw): a stop-the-world that never ends")
		_ = log.Sync()
		spinning := make(chan struct{})
		go spin(spinning)
		<-spinning
		runtime.GC() // waits for spin to stop, for ever, with the world stopped
	}()
	return func() {
		signal.Stop(sig)
		close(quit)
		<-done
	}
}

// spin loops for ever without a call: with asynchronous preemption off,
// nothing can stop it.
func spin(started chan<- struct{}) {
	close(started)
	for i := 0; ; i++ {
	}
}
