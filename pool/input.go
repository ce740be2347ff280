package pool

import (
	"strings"

	"github.com/stint-run/stint/sandbox"
	"go.uber.org/zap"
)

// KindInputUnavailable (sandbox.KindInputUnavailable, which owns every
// kind) is the outcome of an attempt whose input Config.Input could not
// give: the file it lives in was changed, removed or cannot be read since
// the task was submitted. The task is dead at once (running it again reads
// the same file), and the attempt's reason is the error.
const KindInputUnavailable = sandbox.KindInputUnavailable

// loadInput gives the attempt its stdin from Config.Input, when the pool
// has one; it returns the KindInputUnavailable outcome that ends the task
// when there is none to give.
func (p *Pool) loadInput(a *attempt) *sandbox.Outcome {
	if p.cfg.Input == nil {
		return nil
	}
	in, err := p.cfg.Input(a.ctx, a.claimed.Task)
	if a.ctx.Err() != nil {
		return forcedOutcome(a.ctx, "while reading the input")
	}
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), "\n", "; ")
		p.log.Warn("task input unavailable", zap.Int64("task", a.claimed.Task.ID), zap.String("reason", msg))
		return &sandbox.Outcome{Kind: KindInputUnavailable, Message: msg, Err: err}
	}
	a.input, a.hasInput = in, true
	return nil
}
