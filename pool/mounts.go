package pool

import (
	"strings"

	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"go.uber.org/zap"
)

// KindRefused (sandbox.KindRefused, which owns every kind) is the outcome
// of an attempt the runner refused to start because the task asks for
// something this runner does not grant: a mount outside its mounts.allow,
// one whose host directory does not exist, or a work budget
// (tasks.Limits.Work) on a runner whose sandbox does not count loops
// (sandbox.ErrWorkNeedsChecks). The task is dead at once (running it again
// cannot help), and the attempt's reason says what was refused.
const KindRefused = sandbox.KindRefused

// grantMounts is the pool's check of an attempt's mounts, made by the
// runner that runs the task with its own Policy.MountsAllow, whatever was checked
// at submission (the store's content is not trusted). It opens each
// mount's directory and checks that descriptor (tasks.OpenMounts), which
// is what the sandbox mounts: a path changed after the check (a guest with
// a writable mount can rename directories and make symlinks under the
// allow-list) changes nothing. It sets a.mounts to the granted mounts,
// which releaseMounts closes, or returns the KindRefused outcome that ends
// the task.
func (p *Pool) grantMounts(a *attempt) *sandbox.Outcome {
	ms, err := tasks.OpenMounts(a.claimed.Task.Mounts, p.cfg.Policy.MountsAllow)
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), "\n", "; ")
		p.log.Warn("task refused: its mounts are not allowed here", zap.Int64("task", a.claimed.Task.ID), zap.String("reason", msg))
		return &sandbox.Outcome{Kind: KindRefused, Message: msg, Err: err}
	}
	a.mounts = ms
	return nil
}

// releaseMounts closes the attempt's granted directories. The sandbox
// holds descriptors of its own for as long as a run uses them.
func (a *attempt) releaseMounts() {
	_ = tasks.CloseMounts(a.mounts)
	a.mounts = nil
}
