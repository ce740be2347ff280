package sandbox

import "context"

// WaitCompilations waits until no compilation runs (waitCompilations), for
// the tests of package sandbox_test that check for leaked goroutines.
func (r *Runtime) WaitCompilations(ctx context.Context) error { return r.waitCompilations(ctx) }

// MaxCallStackLimit is the largest ModuleLimits.MaxCallStack.
const MaxCallStackLimit = maxCallStackLimit

// ThreadCPU is threadCPU: the calling thread's CPU time (lock the
// goroutine to its thread first).
var ThreadCPU = threadCPU
