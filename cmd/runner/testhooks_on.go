//go:build stint_testhooks

package main

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"time"

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
