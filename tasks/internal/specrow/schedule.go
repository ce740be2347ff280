package specrow

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/stint-run/stint/tasks"
)

// Schedule is sc as AddSchedule stores it at now: created now, never run,
// checked (tasks.Schedule.Validate), with its spec as the JSON of its
// spec column.
func Schedule(sc tasks.Schedule, now time.Time) (tasks.Schedule, []byte, error) {
	sc.Created, sc.LastRun, sc.LastTask = now, time.Time{}, 0
	if err := sc.Validate(); err != nil {
		return tasks.Schedule{}, nil, err
	}
	spec, err := json.Marshal(sc.Spec)
	if err != nil {
		return tasks.Schedule{}, nil, err
	}
	return sc, spec, nil
}

// ReadScheduleSpec decodes spec, what Schedule stored of sc's spec, into
// sc.Spec.
func ReadScheduleSpec(sc *tasks.Schedule, spec string) error {
	if err := json.Unmarshal([]byte(spec), &sc.Spec); err != nil {
		return fmt.Errorf("schedule %s: its stored spec: %w", sc.Name, err)
	}
	return nil
}

// TooManySchedules is AddSchedule's error, begun by backend, when the
// store already holds its limit of schedules (held).
func TooManySchedules(backend, name string, held int) error {
	return fmt.Errorf("%s: add schedule %s: %w: the store already holds %d, its limit (config schedules.max, flag --schedules-max); remove one first",
		backend, name, tasks.ErrTooManySchedules, held)
}
