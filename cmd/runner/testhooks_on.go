//go:build stint_testhooks

package main

import (
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
