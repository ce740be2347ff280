//go:build stint_testhooks

package main

import (
	"os"
	"strconv"

	"github.com/stint-run/stint/internal/testwasm/blockhost"
	"github.com/stint-run/stint/sandbox"
)

// testHostModules are the host modules of the end-to-end tests' build
// (go build -tags stint_testhooks, main_test.go): blockhost's
// stint_test.block, a host call that no forced stop ends, so that the
// tests can give the real runner a guest its watchdog must abandon. Never
// in a real runner: it lets a guest open any host path.
func testHostModules() []sandbox.HostModuleDef {
	return []sandbox.HostModuleDef{blockhost.Def()}
}

// batchHoldLimit is batchHoldBudget, or STINT_TEST_BATCH_HOLD bytes when
// set: a test gives 0 to have every attempt read its input file.
func batchHoldLimit() int64 {
	if v, err := strconv.ParseInt(os.Getenv("STINT_TEST_BATCH_HOLD"), 10, 64); err == nil {
		return v
	}
	return batchHoldBudget
}
