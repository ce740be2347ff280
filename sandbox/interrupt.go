package sandbox

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero/api"
)

// InterruptMode says how a forced stop reaches a guest that is computing.
// Both modes end every guest: blocking host calls (stdin, sleep, the
// checkpoint callback) end on the hard context in either, and Stint's own
// stop check (a global the host sets, tested by code the module rewrite
// adds, see prepare.go) is at every function entry in both, so a guest that
// recurses without a loop is stopped too.
type InterruptMode string

const (
	// InterruptWazero (the default): wazero's close-on-context-done checks
	// the context at every loop header; Stint's check is at function
	// entries. Tight loops run 12-46x slower than without a stop mechanism.
	InterruptWazero InterruptMode = "wazero"
	// InterruptChecks: close-on-context-done is off and Stint's check is at
	// every loop header and function entry. Compute runs at nearly full
	// speed (see docs/benchmarks.md, section 4).
	InterruptChecks InterruptMode = "checks"
)

// InterruptModes lists the modes, the default first.
var InterruptModes = []InterruptMode{InterruptWazero, InterruptChecks}

// ParseInterruptMode reads a mode's name ("wazero" or "checks").
func ParseInterruptMode(s string) (InterruptMode, error) {
	for _, m := range InterruptModes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("sandbox: interrupt mode %q: want wazero or checks", s)
}

// closeOnContextDone reports whether wazero's close-on-context-done is on.
func (m InterruptMode) closeOnContextDone() bool { return m != InterruptChecks }

// loopChecks reports whether Stint's check goes at loop headers too.
func (m InterruptMode) loopChecks() bool { return m == InterruptChecks }

// callGuest runs an instance of mod: it arms the stop global so that the
// hard context's end makes the next check trap, calls the former start
// function if the module had one, then _start.
func callGuest(ctx, hard context.Context, inst api.Module, mod *Module) error {
	if g, ok := inst.ExportedGlobal(mod.stopExport).(api.MutableGlobal); ok {
		stop := context.AfterFunc(hard, func() { g.Set(1) })
		defer stop()
	} else if mod.stopExport != "" {
		return fmt.Errorf("sandbox: the stop global %q is missing from the instance", mod.stopExport)
	}
	if mod.startExport != "" {
		f := inst.ExportedFunction(mod.startExport)
		if f == nil {
			return fmt.Errorf("sandbox: the start function %q is missing from the instance", mod.startExport)
		}
		if _, err := f.Call(ctx); err != nil {
			return err
		}
	}
	_, err := inst.ExportedFunction("_start").Call(ctx)
	return err
}
