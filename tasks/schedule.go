package tasks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Errors of a Store's schedules; test them with errors.Is.
var (
	// ErrScheduleNotFound: no schedule of that name.
	ErrScheduleNotFound = errors.New("schedule not found")
	// ErrScheduleExists: a schedule of that name is already stored.
	ErrScheduleExists = errors.New("schedule already exists")
	// ErrInvalidSchedule: the schedule is not valid (name, period, spec).
	ErrInvalidSchedule = errors.New("invalid schedule")
	// ErrTooManySchedules: the store already holds its most schedules
	// (DefaultMaxSchedules, or the store's option).
	ErrTooManySchedules = errors.New("too many schedules")
)

// DefaultMaxSchedules is how many schedules a store holds at most unless
// its options say otherwise (config schedules.max): each is looked at by
// every runner when it is due, so that their number bounds what an idle
// runner does.
const DefaultMaxSchedules = 10000

// MinEvery is the shortest period of a schedule's Every.
const MinEvery = time.Second

// ScheduleLabel is the label every task of a schedule carries, its value
// the schedule's name.
const ScheduleLabel = "schedule"

// The overlap policies of a schedule (Schedule.Overlap): what a period
// does while the schedule's last task has not ended.
const (
	// OverlapSkip (the default, also ""): no new task while the last is
	// queued or running; the period is skipped, not made up.
	OverlapSkip = "skip"
	// OverlapQueueOne: a new task while the last runs, none while the
	// last is still queued: at most one waits behind a running one.
	OverlapQueueOne = "queue_one"
	// OverlapAllow: a task every period, however many are not done.
	OverlapAllow = "allow"
)

// Schedule submits a task once per period: every Every (periods aligned
// on multiples of Every since the Unix epoch, so "1h" runs on the hour) or
// at each time of a Cron expression (5 fields: minute hour day-of-month
// month day-of-week, in UTC; "@hourly" and the like too).
//
// Exactly one task per period, however many runners serve the store: each
// period's task is submitted with the idempotency key ScheduleKey(name,
// period). Periods missed while no runner ran are not made up in a burst:
// only the latest missed period runs, once, when a runner next looks.
type Schedule struct {
	// Name names the schedule: 1 to 64 letters, digits, '.', '_' or '-'.
	Name string `json:"name"`
	// Every is the period (at least MinEvery); Cron a cron expression.
	// Exactly one of them is set.
	Every time.Duration `json:"every,omitempty"`
	Cron  string        `json:"cron,omitempty"`
	// Spec is the task each period submits. Its IdempotencyKey and RunAt
	// are set by the schedule; its Labels get ScheduleLabel.
	Spec Spec `json:"spec"`
	// Paused schedules submit nothing; resumed, they run from the next
	// period on (the periods paused are not made up).
	Paused bool `json:"paused"`
	// Overlap is what a period does while the last task has not ended:
	// OverlapSkip ("" too), OverlapQueueOne or OverlapAllow.
	Overlap string `json:"overlap,omitempty"`
	// Created is when the schedule was stored (store's clock): its first
	// period is the first after it.
	Created time.Time `json:"created"`
	// LastRun is the start of the latest period a task was submitted for,
	// or when the schedule was last resumed (zero: neither yet); LastTask
	// is the id of the latest task submitted.
	LastRun  time.Time `json:"last_run,omitzero"`
	LastTask int64     `json:"last_task,omitempty"`
}

var scheduleName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// cronParser reads the 5 standard fields and the @ descriptors.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron checks a cron expression (5 fields, or @hourly, @daily...).
func ParseCron(expr string) error {
	_, err := parseCron(expr)
	return err
}

func parseCron(expr string) (cron.Schedule, error) {
	if expr == "" {
		return nil, fmt.Errorf("%w: empty cron expression", ErrInvalidSchedule)
	}
	if len(expr) > 200 {
		return nil, fmt.Errorf("%w: cron expression of %d bytes (at most 200)", ErrInvalidSchedule, len(expr))
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, fmt.Errorf("%w: cron %q: time zones are not supported (schedules run in UTC)", ErrInvalidSchedule, expr)
	}
	sc, err := cronParser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: cron %q: %v (want 5 fields: minute hour day-of-month month day-of-week, e.g. \"0 * * * *\")",
			ErrInvalidSchedule, expr, err)
	}
	return sc, nil
}

// Validate checks the schedule's name, period and spec (Spec.Validate);
// errors wrap ErrInvalidSchedule or ErrInvalidSpec.
func (s Schedule) Validate() error {
	if !scheduleName.MatchString(s.Name) {
		return fmt.Errorf("%w: name %q: want 1 to 64 letters, digits, '.', '_' or '-'", ErrInvalidSchedule, s.Name)
	}
	switch s.Overlap {
	case "", OverlapSkip, OverlapQueueOne, OverlapAllow:
	default:
		return fmt.Errorf("%w: %s: overlap %q: want %s (the default), %s or %s", ErrInvalidSchedule, s.Name, s.Overlap,
			OverlapSkip, OverlapQueueOne, OverlapAllow)
	}
	switch {
	case s.Every != 0 && s.Cron != "":
		return fmt.Errorf("%w: %s: both an interval and a cron expression; give one", ErrInvalidSchedule, s.Name)
	case s.Every == 0 && s.Cron == "":
		return fmt.Errorf("%w: %s: no interval and no cron expression; give one", ErrInvalidSchedule, s.Name)
	case s.Cron != "":
		if _, err := parseCron(s.Cron); err != nil {
			return err
		}
	case s.Every < MinEvery:
		return fmt.Errorf("%w: %s: interval %s: want at least %s", ErrInvalidSchedule, s.Name, s.Every, MinEvery)
	}
	return s.TaskSpec(s.Created).Validate()
}

// Period describes the schedule's period for people: "every 10m0s" or
// "cron 0 * * * *".
func (s Schedule) Period() string {
	if s.Cron != "" {
		return "cron " + s.Cron
	}
	return "every " + s.Every.String()
}

// ScheduleKey is the idempotency key of the task of schedule name for the
// period starting at period.
func ScheduleKey(name string, period time.Time) string {
	return "stint-schedule:" + name + ":" + strconv.FormatInt(period.Unix(), 10)
}

// TaskSpec is the spec of the task for the period starting at period.
func (s Schedule) TaskSpec(period time.Time) Spec {
	spec := s.Spec
	spec.IdempotencyKey = ScheduleKey(s.Name, period)
	spec.RunAt = time.Time{}
	labels := make(map[string]string, len(spec.Labels)+1)
	maps.Copy(labels, spec.Labels)
	labels[ScheduleLabel] = s.Name
	spec.Labels = labels
	return spec
}

// floorEvery is the start of the Every period holding t.
func floorEvery(t time.Time, every time.Duration) time.Time {
	n := t.UnixNano()
	m := n % int64(every)
	if m < 0 {
		m += int64(every)
	}
	return time.Unix(0, n-m).UTC()
}

// maxCatchUp bounds how far back Due looks for a cron schedule's latest
// period: a cron that fires less than yearly and was missed longer runs
// at its next time instead.
const maxCatchUp = 366 * 24 * time.Hour

// Due returns the start of the latest period that began at or before now,
// after Created and after LastRun, and true; or false when no such period
// is due (none began yet, its task was submitted, or the schedule is
// paused or invalid). This is the missed-period policy: of several
// periods missed, only the latest is due.
func (s Schedule) Due(now time.Time) (time.Time, bool) {
	if s.Paused {
		return time.Time{}, false
	}
	after := s.Created
	if s.LastRun.After(after) {
		after = s.LastRun
	}
	var p time.Time
	if s.Cron != "" {
		sc, err := parseCron(s.Cron)
		if err != nil {
			return time.Time{}, false
		}
		from := after
		if now.Sub(from) > maxCatchUp {
			from = now.Add(-maxCatchUp)
		}
		for t := sc.Next(from.UTC()); !t.IsZero() && !t.After(now); t = sc.Next(t) {
			p = t
		}
		if p.IsZero() {
			return time.Time{}, false
		}
	} else {
		if s.Every < MinEvery {
			return time.Time{}, false
		}
		p = floorEvery(now, s.Every)
	}
	if !p.After(after) {
		return time.Time{}, false
	}
	return p, true
}

// Next is when the schedule's next period starts after now (zero for a
// paused or invalid schedule).
func (s Schedule) Next(now time.Time) time.Time {
	if s.Paused {
		return time.Time{}
	}
	if s.Cron != "" {
		sc, err := parseCron(s.Cron)
		if err != nil {
			return time.Time{}
		}
		return sc.Next(now.UTC())
	}
	if s.Every < MinEvery {
		return time.Time{}
	}
	return floorEvery(now, s.Every).Add(s.Every)
}

// Fired is a schedule's task submitted (or found submitted) by
// FireSchedules.
type Fired struct {
	Schedule string
	Period   time.Time
	Task     Task
	// Existing: the period's task was already submitted (by another
	// runner, or an earlier call).
	Existing bool
	// Skipped says why no task was submitted for the period (its overlap
	// policy: the last task has not ended); Task is then that last task.
	Skipped string
}

// FireSchedules submits, through submit (a Store's Submit, or a pool's
// that checks its policy), the task of every schedule of s that is Due at
// now, and marks it run. Any number of runners may call it at once on
// one store: the idempotency key makes one task per period. It goes on
// past a schedule that fails and returns the errors joined.
//
// It reads only the schedules DueSchedules gives (no spec), a due one's
// spec once per period, and defers each to its next period, so that
// schedules that are not due, paused ones included, cost nothing.
func FireSchedules(ctx context.Context, s Store, now time.Time,
	submit func(context.Context, Spec) (Task, bool, error)) ([]Fired, error) {
	list, err := s.DueSchedules(ctx, now)
	if err != nil {
		return nil, err
	}
	var (
		fired []Fired
		errs  []error
	)
	for _, sc := range list {
		f, err := fireSchedule(ctx, s, sc, now, submit)
		if f != nil {
			fired = append(fired, *f)
		}
		if err != nil {
			// Not deferred: the next call tries the period again.
			errs = append(errs, err)
			continue
		}
		// Fired or not due: no period of it starts before Next(now).
		if next := sc.Next(now); !next.IsZero() {
			if err := s.DeferSchedule(ctx, sc, next); err != nil {
				errs = append(errs, fmt.Errorf("schedule %s: %w", sc.Name, err))
			}
		}
	}
	return fired, errors.Join(errs...)
}

// fireSchedule submits the task of sc (read without its spec) if a period
// of it is due at now, or skips the period by its overlap policy.
func fireSchedule(ctx context.Context, s Store, sc Schedule, now time.Time,
	submit func(context.Context, Spec) (Task, bool, error)) (*Fired, error) {
	p, ok := sc.Due(now)
	if !ok {
		return nil, nil
	}
	if last, why := overlapping(ctx, s, sc); why != "" {
		// Skipped: the period counts as run, with the last task.
		f := &Fired{Schedule: sc.Name, Period: p, Task: last, Skipped: why}
		if err := s.MarkScheduleRun(ctx, sc.Name, p, sc.LastTask); err != nil {
			return f, fmt.Errorf("schedule %s: %w", sc.Name, err)
		}
		return f, nil
	}
	full, err := s.GetSchedule(ctx, sc.Name)
	if errors.Is(err, ErrScheduleNotFound) {
		return nil, nil // removed meanwhile
	}
	if err != nil {
		return nil, fmt.Errorf("schedule %s: %w", sc.Name, err)
	}
	sc.Spec = full.Spec
	t, existing, err := submit(ctx, sc.TaskSpec(p))
	if err != nil {
		return nil, fmt.Errorf("schedule %s: submit the task of %s: %w", sc.Name, p.Format(time.RFC3339), err)
	}
	f := &Fired{Schedule: sc.Name, Period: p, Task: t, Existing: existing}
	if err := s.MarkScheduleRun(ctx, sc.Name, p, t.ID); err != nil {
		return f, fmt.Errorf("schedule %s: %w", sc.Name, err)
	}
	return f, nil
}

// overlapping returns the schedule's last task and why its overlap policy
// skips a new one ("" to submit): skip while the last is queued or
// running, queue_one while it is queued. A last task gone (deleted,
// pruned), or that cannot be read, does not hold a period back.
func overlapping(ctx context.Context, s Store, sc Schedule) (Task, string) {
	if sc.Overlap == OverlapAllow || sc.LastTask == 0 {
		return Task{}, ""
	}
	last, err := s.Get(ctx, sc.LastTask)
	if err != nil {
		return Task{}, ""
	}
	switch {
	case last.State == StateQueued:
		return last, fmt.Sprintf("its last task %d is still queued (overlap %s)", last.ID, sc.overlap())
	case last.State == StateRunning && sc.overlap() == OverlapSkip:
		return last, fmt.Sprintf("its last task %d is still running (overlap %s)", last.ID, OverlapSkip)
	}
	return Task{}, ""
}

// overlap is the schedule's overlap policy, the default spelled out.
func (s Schedule) overlap() string {
	if s.Overlap == "" {
		return OverlapSkip
	}
	return s.Overlap
}

// RunScheduleNow submits, through submit, a task of schedule name now,
// apart from its periods: its own idempotency key, and the schedule's
// LastRun and LastTask (which its overlap policy looks at) unchanged. A
// paused schedule runs too: it is asked for. ErrScheduleNotFound if none.
func RunScheduleNow(ctx context.Context, s Store, name string, now time.Time,
	submit func(context.Context, Spec) (Task, bool, error)) (Task, error) {
	sc, err := s.GetSchedule(ctx, name)
	if err != nil {
		return Task{}, err
	}
	spec := sc.TaskSpec(now)
	spec.IdempotencyKey = "stint-schedule-now:" + name + ":" + strconv.FormatInt(now.UnixNano(), 10)
	t, _, err := submit(ctx, spec)
	if err != nil {
		return Task{}, fmt.Errorf("schedule %s: submit a task now: %w", name, err)
	}
	return t, nil
}
