package server

import (
	"context"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/stint-run/stint/tasks"
)

// The metrics to alert on: what the store holds (tasks by queue and state,
// runners, schedules), read at scrape time; how attempts end and how long
// they wait and run, observed as the pool reports them (ObserveAttempt*);
// and the build.

// storeScrapeTimeout bounds the store's queries of one scrape.
const storeScrapeTimeout = 5 * time.Second

// storeCollector reads the store at scrape time: counts, paused queues,
// runners, schedules, tenants and the queues' limits.
type storeCollector struct {
	store                           tasks.Store
	log                             *zap.Logger
	tasks, queueTasks, runners      *prometheus.Desc
	schedules, scheduleNext, scrape *prometheus.Desc
	scheduled, oldestReady, paused  *prometheus.Desc
	tenantRunning, tenantWork       *prometheus.Desc
	tenantClaimed                   *prometheus.Desc
	tenantQueued, tenantScheduled   *prometheus.Desc
	tenantThrottled                 *prometheus.Desc
	queueWork, queueThrottled       *prometheus.Desc
}

func newStoreCollector(store tasks.Store, log *zap.Logger) *storeCollector {
	return &storeCollector{
		store: store, log: log,
		tasks: prometheus.NewDesc("stint_tasks",
			"Tasks in the store by state, every queue together (claimed: claimed by a runner, no worker of which began "+
				"them yet; running: begun).", []string{"state"}, nil),
		queueTasks: prometheus.NewDesc("stint_queue_tasks",
			"Tasks in the store by queue and state (on SQLite, succeeded tasks are counted in stint_tasks only).",
			[]string{"queue", "state"}, nil),
		runners: prometheus.NewDesc("stint_runners",
			"Runners recorded in the store by status: alive (heard from within its lease), draining (alive, stopping), "+
				"silent (not heard from past its lease: dead, hung or cut off).", []string{"status"}, nil),
		schedules: prometheus.NewDesc("stint_schedules",
			"Schedules in the store by status (active, paused).", []string{"status"}, nil),
		scheduleNext: prometheus.NewDesc("stint_schedule_next_run_timestamp_seconds",
			"When each active schedule's next period starts (Unix time); a value in the past by more than a few "+
				"seconds means no runner fires it.", []string{"schedule"}, nil),
		scheduled: prometheus.NewDesc("stint_queue_scheduled_tasks",
			"Queued tasks of each queue that are not ready yet (run at a later time, or a retry's backoff): part of "+
				"stint_queue_tasks{state=\"queued\"}; the rest are ready.", []string{"queue"}, nil),
		oldestReady: prometheus.NewDesc("stint_queue_oldest_ready_age_seconds",
			"How long the ready task of each queue that became ready first has waited (0: none ready): the queue's "+
				"latency. Rising while the queue is not paused: no runner takes its tasks.", []string{"queue"}, nil),
		paused: prometheus.NewDesc("stint_queue_paused",
			"1 for each paused queue (runner queues pause): its tasks wait however old.", []string{"queue"}, nil),
		tenantRunning: prometheus.NewDesc("stint_tenant_running_tasks",
			"Tasks running now (a worker began them) of each tenant with a task queued or running or a setting (runner tenants), "+
				"across every runner of the store.",
			[]string{"tenant"}, nil),
		tenantClaimed: prometheus.NewDesc("stint_tenant_claimed_tasks",
			"Tasks of each tenant claimed by a runner, no worker of which began them yet (with the running ones, they count "+
				"against the tenant's max-running).",
			[]string{"tenant"}, nil),
		tenantQueued: prometheus.NewDesc("stint_tenant_queued_tasks",
			"Tasks ready to run now of each tenant named by a task (the empty tenant's are stint_queue_tasks').",
			[]string{"tenant"}, nil),
		tenantScheduled: prometheus.NewDesc("stint_tenant_scheduled_tasks",
			"Tasks queued for later (a run-at, a retry's backoff) of each tenant named by a task.",
			[]string{"tenant"}, nil),
		tenantWork: prometheus.NewDesc("stint_tenant_work_units_used",
			"Work units the attempts of each tenant with a work quota did in its quota's current period.",
			[]string{"tenant"}, nil),
		tenantThrottled: prometheus.NewDesc("stint_tenant_throttled",
			"1 for each tenant at its work quota: no runner claims its tasks until its next period.", []string{"tenant"}, nil),
		queueWork: prometheus.NewDesc("stint_queue_work_units_used",
			"Work units the attempts of each queue with a work quota (runner queues quota) did in its quota's current period.",
			[]string{"queue"}, nil),
		queueThrottled: prometheus.NewDesc("stint_queue_throttled",
			"1 for each queue with a work quota that it reached: no runner claims its tasks until its next period.",
			[]string{"queue"}, nil),
		scrape: prometheus.NewDesc("stint_store_scrape_errors",
			"1 when this scrape could not read the store (the stint_tasks, stint_queue_tasks, stint_runners and "+
				"stint_schedules values are then missing), else 0.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.tasks, c.queueTasks, c.runners, c.schedules, c.scheduleNext, c.scrape,
		c.scheduled, c.oldestReady, c.paused, c.tenantRunning, c.tenantClaimed, c.tenantQueued, c.tenantScheduled, c.tenantWork, c.tenantThrottled,
		c.queueWork, c.queueThrottled} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), storeScrapeTimeout)
	defer cancel()
	failed := 0.0
	fail := func(what string, err error) {
		failed = 1
		c.log.Warn("metrics: reading the store failed", zap.String("what", what), zap.Error(err))
	}
	if counts, err := c.store.CountTasks(ctx); err != nil {
		fail("task counts", err)
	} else {
		for _, st := range allStates {
			ch <- prometheus.MustNewConstMetric(c.tasks, prometheus.GaugeValue, float64(counts.Total[st]), string(st))
		}
		for _, q := range counts.ByQueue {
			ch <- prometheus.MustNewConstMetric(c.queueTasks, prometheus.GaugeValue, float64(q.Count), q.Queue, string(q.State))
		}
		for _, w := range counts.Waiting {
			ch <- prometheus.MustNewConstMetric(c.scheduled, prometheus.GaugeValue, float64(w.Scheduled), w.Queue)
			age, _ := w.Waited(counts.Now) // 0: none ready
			ch <- prometheus.MustNewConstMetric(c.oldestReady, prometheus.GaugeValue, age.Seconds(), w.Queue)
		}
	}
	if list, err := c.store.PausedQueues(ctx); err != nil {
		fail("paused queues", err)
	} else {
		for _, q := range list {
			ch <- prometheus.MustNewConstMetric(c.paused, prometheus.GaugeValue, 1, q.Queue)
		}
	}
	if list, err := c.store.Runners(ctx); err != nil {
		fail("runners", err)
	} else {
		n := map[string]int{"alive": 0, "draining": 0, "silent": 0}
		for _, r := range list {
			switch {
			case r.Silent:
				n["silent"]++
			case r.Draining:
				n["draining"]++
			default:
				n["alive"]++
			}
		}
		for status, v := range n {
			ch <- prometheus.MustNewConstMetric(c.runners, prometheus.GaugeValue, float64(v), status)
		}
	}
	if list, err := c.store.ScheduleStates(ctx); err != nil {
		fail("schedules", err)
	} else {
		var active, paused int
		now := time.Now()
		for _, s := range list {
			if s.Paused {
				paused++
				continue
			}
			active++
			// The period due now, if its task is not submitted yet,
			// else the next one.
			next := s.Next(now)
			if p, due := s.Due(now); due {
				next = p
			}
			ch <- prometheus.MustNewConstMetric(c.scheduleNext, prometheus.GaugeValue, float64(next.UnixMilli())/1000, s.Name)
		}
		ch <- prometheus.MustNewConstMetric(c.schedules, prometheus.GaugeValue, float64(active), "active")
		ch <- prometheus.MustNewConstMetric(c.schedules, prometheus.GaugeValue, float64(paused), "paused")
	}
	if all, err := c.store.Tenants(ctx); err != nil {
		fail("tenants", err)
	} else {
		for name, t := range all {
			ch <- prometheus.MustNewConstMetric(c.tenantRunning, prometheus.GaugeValue, float64(t.Running), name)
			ch <- prometheus.MustNewConstMetric(c.tenantClaimed, prometheus.GaugeValue, float64(t.Claimed), name)
			ch <- prometheus.MustNewConstMetric(c.tenantQueued, prometheus.GaugeValue, float64(t.Queued), name)
			ch <- prometheus.MustNewConstMetric(c.tenantScheduled, prometheus.GaugeValue, float64(t.Scheduled), name)
			if t.WorkQuota > 0 {
				ch <- prometheus.MustNewConstMetric(c.tenantWork, prometheus.GaugeValue, float64(t.WorkUsed), name)
				throttled := 0.0
				if !t.ThrottledUntil.IsZero() {
					throttled = 1
				}
				ch <- prometheus.MustNewConstMetric(c.tenantThrottled, prometheus.GaugeValue, throttled, name)
			}
		}
	}
	if all, err := c.store.QueueLimits(ctx); err != nil {
		fail("queue limits", err)
	} else {
		for name, q := range all {
			if q.WorkQuota > 0 {
				ch <- prometheus.MustNewConstMetric(c.queueWork, prometheus.GaugeValue, float64(q.WorkUsed), name)
				throttled := 0.0
				if !q.ThrottledUntil.IsZero() {
					throttled = 1
				}
				ch <- prometheus.MustNewConstMetric(c.queueThrottled, prometheus.GaugeValue, throttled, name)
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(c.scrape, prometheus.GaugeValue, failed)
}

// attemptMetrics are observed as the pool reports attempts.
type attemptMetrics struct {
	ended    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	wait     *prometheus.HistogramVec
	work     *prometheus.CounterVec
}

// attemptBuckets span a plugin call of a millisecond to a batch job of an
// hour, in seconds.
var attemptBuckets = []float64{0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 30, 60, 300, 900, 3600}

func newAttemptMetrics() *attemptMetrics {
	return &attemptMetrics{
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stint_attempts_ended_total",
			Help: "Attempts this runner ran and recorded, by queue and outcome kind (succeeded, failed, timed_out, " +
				"memory_limit, interrupted, forced, cancelled, ...; docs/operations.md).",
		}, []string{"queue", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "stint_attempt_duration_seconds",
			Help:    "How long the attempts this runner recorded ran, by queue, in seconds.",
			Buckets: attemptBuckets,
		}, []string{"queue"}),
		work: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stint_attempt_work_units_total",
			Help: "Work units the guests of the attempts this runner recorded did, by queue (the sandbox's work count: " +
				"the same for the same module and input, not instructions; docs/guest-abi.md).",
		}, []string{"queue"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "stint_queue_wait_seconds",
			Help:    "How long tasks were ready in the queue before this runner started their attempt, by queue, in seconds.",
			Buckets: attemptBuckets,
		}, []string{"queue"}),
	}
}

// ObserveAttemptStart records that an attempt of a task of queue started
// after the task had been ready for waited (stint_queue_wait_seconds).
// Call it from the pool's started events (pool.Event.Waited).
func (s *Server) ObserveAttemptStart(queue string, waited time.Duration) {
	s.attempts.wait.WithLabelValues(queue).Observe(waited.Seconds())
}

// ObserveAttemptEnd records an attempt of a task of queue and tenant
// recorded with outcome after running for took, its guest having done
// work units
// (stint_attempts_ended_total, stint_attempt_duration_seconds,
// stint_attempt_work_units_total, and the dashboard's graph of the last
// hour). Call it from the pool's ended events.
func (s *Server) ObserveAttemptEnd(queue, tenant, outcome string, took time.Duration, work int64) {
	if outcome == "" {
		outcome = "unknown"
	}
	s.tp.add(time.Now(), queue, tenant, outcome == "succeeded") // first: a test that sees the count sees the graph
	s.attempts.ended.WithLabelValues(queue, outcome).Inc()
	s.attempts.duration.WithLabelValues(queue).Observe(max(took, 0).Seconds())
	s.attempts.work.WithLabelValues(queue).Add(float64(max(work, 0)))
}

// buildInfo is stint_build_info: 1, labelled with the version.
func buildInfo(version string) prometheus.Collector {
	if version == "" {
		version = "unknown"
	}
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "stint_build_info",
		Help:        "1, labelled with the runner's version and the Go version that built it.",
		ConstLabels: prometheus.Labels{"version": version, "go_version": runtime.Version()},
	}, func() float64 { return 1 })
}
