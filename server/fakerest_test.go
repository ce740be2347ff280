package server_test

import (
	"context"
	"time"

	"github.com/stint-run/stint/tasks"
)

// fakeRest is the part of tasks.Store that the HTTP-shape tests' fakeStore
// does not keep: every method fails with errNotImplemented.
type fakeRest struct{}

func (fakeRest) NameModule(context.Context, string, string) error { return errNotImplemented }
func (fakeRest) ModuleNames(context.Context, []string) (map[string]string, error) {
	return nil, errNotImplemented
}
func (fakeRest) SubmitMany(context.Context, []tasks.Spec) ([]tasks.Submitted, error) {
	return nil, errNotImplemented
}
func (fakeRest) ListNewest(context.Context, tasks.NewestFilter) ([]tasks.Task, error) {
	return nil, errNotImplemented
}
func (fakeRest) CountTasks(context.Context) (tasks.TaskCounts, error) {
	return tasks.TaskCounts{}, errNotImplemented
}
func (fakeRest) ListenWakeups() (<-chan struct{}, func() error, error) {
	return nil, nil, errNotImplemented
}
func (fakeRest) SaveSnapshot(context.Context, tasks.Lease, []byte, tasks.SnapshotInfo) error {
	return errNotImplemented
}
func (fakeRest) AppendSnapshot(context.Context, tasks.Lease, int, []byte, tasks.SnapshotInfo) error {
	return errNotImplemented
}
func (fakeRest) Snapshot(context.Context, int64) ([]byte, tasks.SnapshotInfo, error) {
	return nil, tasks.SnapshotInfo{}, errNotImplemented
}
func (fakeRest) DropSnapshot(context.Context, tasks.Lease) error { return errNotImplemented }
func (fakeRest) Delete(context.Context, int64) error             { return errNotImplemented }
func (fakeRest) ActBatch(context.Context, tasks.Action, []int64) (int, error) {
	return 0, errNotImplemented
}
func (fakeRest) PauseQueue(context.Context, string) error  { return errNotImplemented }
func (fakeRest) ResumeQueue(context.Context, string) error { return errNotImplemented }
func (fakeRest) PausedQueues(context.Context) ([]tasks.PausedQueue, error) {
	return nil, errNotImplemented
}
func (fakeRest) Prune(context.Context, time.Time) (int, error)          { return 0, errNotImplemented }
func (fakeRest) SetTenantWeight(context.Context, string, int) error     { return errNotImplemented }
func (fakeRest) SetTenantMaxRunning(context.Context, string, int) error { return errNotImplemented }
func (fakeRest) SetTenantWorkQuota(context.Context, string, int64, time.Duration) error {
	return errNotImplemented
}
func (fakeRest) SetTenantRate(context.Context, string, float64) error { return errNotImplemented }
func (fakeRest) Tenants(context.Context) (map[string]tasks.Tenant, error) {
	return nil, errNotImplemented
}
func (fakeRest) SetQueueMaxRunning(context.Context, string, int) error { return errNotImplemented }
func (fakeRest) SetQueueWorkQuota(context.Context, string, int64, time.Duration) error {
	return errNotImplemented
}
func (fakeRest) SetQueueRate(context.Context, string, float64) error { return errNotImplemented }
func (fakeRest) QueueLimits(context.Context) (map[string]tasks.SharedLimits, error) {
	return nil, errNotImplemented
}
func (fakeRest) RecordRunner(context.Context, tasks.RunnerInfo) (bool, error) {
	return false, errNotImplemented
}
func (fakeRest) RequestDrain(context.Context, string) error { return errNotImplemented }
func (fakeRest) Runners(context.Context) ([]tasks.RunnerInfo, error) {
	return nil, errNotImplemented
}
func (fakeRest) RemoveRunner(context.Context, string) error           { return errNotImplemented }
func (fakeRest) PruneRunners(context.Context, time.Time) (int, error) { return 0, errNotImplemented }
func (fakeRest) AddSchedule(context.Context, tasks.Schedule) (tasks.Schedule, error) {
	return tasks.Schedule{}, errNotImplemented
}
func (fakeRest) Schedules(context.Context) ([]tasks.Schedule, error) { return nil, errNotImplemented }
func (fakeRest) ScheduleStates(context.Context) ([]tasks.Schedule, error) {
	return nil, errNotImplemented
}
func (fakeRest) DueSchedules(context.Context, time.Time) ([]tasks.Schedule, error) {
	return nil, errNotImplemented
}
func (fakeRest) DeferSchedule(context.Context, tasks.Schedule, time.Time) error {
	return errNotImplemented
}
func (fakeRest) GetSchedule(context.Context, string) (tasks.Schedule, error) {
	return tasks.Schedule{}, errNotImplemented
}
func (fakeRest) RemoveSchedule(context.Context, string) error { return errNotImplemented }
func (fakeRest) PauseSchedule(context.Context, string, bool) (tasks.Schedule, error) {
	return tasks.Schedule{}, errNotImplemented
}
func (fakeRest) MarkScheduleRun(context.Context, string, time.Time, int64) error {
	return errNotImplemented
}
