package sandbox

import (
	"context"
	"errors"
	"fmt"
)

// The call-stack limit (ModuleLimits.MaxCallStack). wazero keeps a
// guest's call stack in Go memory, outside the guest's memory limit, and
// lets it grow to about 100 MB (150 MB while it is copied) before it
// traps; a guest that recurses without end made the runner hold that
// much per running task. The rewrite (internal/rewrite) counts what each call
// of a function that calls others takes from a budget, in a global the
// guest cannot name, gives it back on every way out of the function, and
// calls callStackFunc when a call would take the budget below zero. A
// function whose calls all lie in one arm of an if (the calling arm)
// takes its frame in that arm only: a call that takes the other arm
// calls nothing, so it cannot deepen the stack.

// callStack is the host function the rewrite's check calls when a call
// would go over the limit: it ends the guest with ErrCallStack.
func callStack(context.Context, []uint64) {
	panic(ErrCallStack)
}

// callStackFailure classifies a run ended by the call-stack limit: a
// trap whose message names the limit. It reports whether err was one.
func callStackFailure(err error, out *Outcome, limit uint32) bool {
	if !errors.Is(err, ErrCallStack) {
		return false
	}
	out.Kind = KindTrapped
	_, out.Stack = splitTrap(err)
	out.Message = fmt.Sprintf("%s of %d bytes (sandbox module limit max_call_stack): a recursion too deep?", ErrCallStack, limit)
	return true
}
