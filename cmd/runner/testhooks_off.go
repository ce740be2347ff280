//go:build !stint_testhooks

package main

import (
	"context"

	"go.uber.org/zap"

	"github.com/stint-run/stint/sandbox"
)

// testHostModules are the host modules of the end-to-end tests' build
// (testhooks_on.go); a real runner has none.
func testHostModules() []sandbox.HostModuleDef { return nil }

// batchHoldBytes is batch.Config.HoldBytes: 0, the default
// (testhooks_on.go lets a test change it).
func batchHoldBytes() int64 { return 0 }

// testGC does nothing (testhooks_on.go: the tests' periodic collections).
func testGC(context.Context) {}

// testWedge does nothing (testhooks_on.go: a runner frozen on purpose).
func testWedge(*zap.Logger) (stop func()) { return func() {} }
