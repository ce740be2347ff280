package server

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// poolCollector reads the pool's counters at scrape time, so the values are
// never stale and nothing has to push them.
type poolCollector struct {
	stats    func() PoolStats
	running  *prometheus.Desc
	attempts *prometheus.Desc
	held     *prometheus.Desc
	given    *prometheus.Desc
	resumes  *prometheus.Desc
	lost     *prometheus.Desc
	snaps    *prometheus.Desc
	deltas   *prometheus.Desc
	snapSize *prometheus.Desc
	snapTime *prometheus.Desc
}

func newPoolCollector(stats func() PoolStats) *poolCollector {
	return &poolCollector{
		stats: stats,
		running: prometheus.NewDesc("stint_pool_running",
			"Attempts in flight in the worker pool now: claimed (stint_pool_held: waiting for a free worker), running, "+
				"or ended and waiting for their completion to be written.", nil, nil),
		held: prometheus.NewDesc("stint_pool_held",
			"Tasks this runner claimed that wait for a free worker (claimed ahead of its workers, part of stint_pool_running; the store shows them claimed).", nil, nil),
		given: prometheus.NewDesc("stint_pool_given_back_total",
			"Tasks claimed ahead that waited too long behind busy workers and went back to the queue, for any runner.", nil, nil),
		attempts: prometheus.NewDesc("stint_pool_attempts_total",
			"Attempts the worker pool ended, by how they ended: finished (on their own, any outcome), "+
				"interrupted (stopped cooperatively on a shutdown), forced (ended by the forced stop), "+
				"lost (lease taken over or result refused), suspended (a drain or a deadline suspended it, its snapshot stored).",
			[]string{"result"}, nil),
		lost: prometheus.NewDesc("stint_pool_attempts_lost_to_crashes_total",
			"Attempts lost to crashes (their runners died while running them: killed, out of memory, a lost machine), "+
				"counted once each by the runner that recorded the loss: it took over the expired lease, or recovered the attempt at its start; "+
				"those that made their task dead included.", nil, nil),
		resumes: prometheus.NewDesc("stint_pool_resumes_total",
			"Attempts that resumed from their task's stored snapshot.", nil, nil),
		snaps: prometheus.NewDesc("stint_pool_snapshots_total",
			"Snapshots of running guests stored (snapshots.every, drains, deadlines).", nil, nil),
		deltas: prometheus.NewDesc("stint_pool_snapshot_deltas_total",
			"Snapshots stored as what changed since the one before (the memory pages whose bytes changed), of stint_pool_snapshots_total.", nil, nil),
		snapSize: prometheus.NewDesc("stint_pool_snapshot_bytes_total",
			"Encoded bytes of the snapshots stored.", nil, nil),
		snapTime: prometheus.NewDesc("stint_pool_snapshot_seconds_total",
			"Time spent encoding and writing snapshots, beside the guests.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.running
	ch <- c.held
	ch <- c.given
	ch <- c.attempts
	ch <- c.resumes
	ch <- c.lost
	ch <- c.snaps
	ch <- c.deltas
	ch <- c.snapSize
	ch <- c.snapTime
}

// Collect implements prometheus.Collector.
func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, float64(st.Running))
	ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(st.Held))
	ch <- prometheus.MustNewConstMetric(c.given, prometheus.CounterValue, float64(st.GivenBack))
	for _, r := range []struct {
		label string
		n     int
	}{
		{"finished", st.Finished},
		{"interrupted", st.Interrupted},
		{"forced", st.Forced},
		{"lost", st.Lost},
		{"suspended", st.Suspended},
	} {
		ch <- prometheus.MustNewConstMetric(c.attempts, prometheus.CounterValue, float64(r.n), r.label)
	}
	ch <- prometheus.MustNewConstMetric(c.resumes, prometheus.CounterValue, float64(st.Resumed))
	ch <- prometheus.MustNewConstMetric(c.lost, prometheus.CounterValue, float64(st.LostToCrashes))
	ch <- prometheus.MustNewConstMetric(c.snaps, prometheus.CounterValue, float64(st.Snapshots))
	ch <- prometheus.MustNewConstMetric(c.deltas, prometheus.CounterValue, float64(st.SnapshotDeltas))
	ch <- prometheus.MustNewConstMetric(c.snapSize, prometheus.CounterValue, float64(st.SnapshotBytes))
	ch <- prometheus.MustNewConstMetric(c.snapTime, prometheus.CounterValue, st.SnapshotTime.Seconds())
}

// sandboxCollector reads the sandbox runtime's counters at scrape time.
type sandboxCollector struct {
	stats                                           func() SandboxStats
	modules, compilations, evictions, cacheFailures *prometheus.Desc
}

func newSandboxCollector(stats func() SandboxStats) *sandboxCollector {
	return &sandboxCollector{
		stats: stats,
		modules: prometheus.NewDesc("stint_sandbox_modules",
			"Compiled modules the sandbox runtime keeps in memory now (at most max_compiled_modules).", nil, nil),
		compilations: prometheus.NewDesc("stint_sandbox_compilations_total",
			"Modules compiled, or loaded from the on-disk compilation cache.", nil, nil),
		evictions: prometheus.NewDesc("stint_sandbox_evictions_total",
			"Compiled modules dropped to stay within max_compiled_modules (a high rate: raise it).", nil, nil),
		cacheFailures: prometheus.NewDesc("stint_sandbox_cache_failures_total",
			"Compilations for which the on-disk cache could not be read or written (a full disk?), "+
				"so the module was compiled without it.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *sandboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.modules
	ch <- c.compilations
	ch <- c.evictions
	ch <- c.cacheFailures
}

// Collect implements prometheus.Collector.
func (c *sandboxCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	ch <- prometheus.MustNewConstMetric(c.modules, prometheus.GaugeValue, float64(st.Modules))
	ch <- prometheus.MustNewConstMetric(c.compilations, prometheus.CounterValue, float64(st.Compilations))
	ch <- prometheus.MustNewConstMetric(c.evictions, prometheus.CounterValue, float64(st.Evictions))
	ch <- prometheus.MustNewConstMetric(c.cacheFailures, prometheus.CounterValue, float64(st.CacheFailures))
}

// newRegistry builds the server's own registry (never the global one):
// the pool and readiness metrics, the HTTP request counter it returns, and
// the Go and process collectors.
func newRegistry(deps Deps, inflightBytes func() int64, inflightRequests func() int) (*prometheus.Registry, *prometheus.CounterVec, error) {
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stint_http_requests_total",
		Help: "HTTP requests served, by method, route pattern's path (\"/v1/tasks/{id}\"; \"unmatched\" for none) and status code.",
	}, []string{"method", "route", "code"})
	ready := deps.Ready
	cs := []prometheus.Collector{
		requests,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "stint_ready",
			Help: "1 while the runner is ready (takes new work), 0 from the first shutdown phase on.",
		}, func() float64 {
			if ready() {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "stint_http_inflight_bytes",
			Help: "Bytes held by API requests now: bodies being read and processed, stored inputs and results being served (at most http.max_inflight_bytes).",
		}, func() float64 { return float64(inflightBytes()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "stint_http_inflight_requests",
			Help: "API requests (/v1/) in progress now (at most http.max_concurrent).",
		}, func() float64 { return float64(inflightRequests()) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}
	if deps.Stats != nil {
		cs = append(cs, newPoolCollector(deps.Stats))
	}
	if deps.SandboxStats != nil {
		cs = append(cs, newSandboxCollector(deps.SandboxStats), newStoppingCollector(deps.SandboxStats))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, nil, fmt.Errorf("server: metrics: %w", err)
		}
	}
	return reg, requests, nil
}

// stoppingCollector reads the sandbox runtime's compile budget and stop
// watchdog counters at scrape time: work that wazero cannot stop, left
// running.
type stoppingCollector struct {
	stats   func() SandboxStats
	metrics []stoppingMetric
}

type stoppingMetric struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(SandboxStats) float64
}

func newStoppingCollector(stats func() SandboxStats) *stoppingCollector {
	m := func(name, help string, typ prometheus.ValueType, value func(SandboxStats) float64) stoppingMetric {
		return stoppingMetric{prometheus.NewDesc(name, help, nil, nil), typ, value}
	}
	return &stoppingCollector{stats: stats, metrics: []stoppingMetric{
		m("stint_sandbox_compiling", "Module compilations running now.",
			prometheus.GaugeValue, func(s SandboxStats) float64 { return float64(s.Compiling) }),
		m("stint_sandbox_compiling_abandoned",
			"Compilations running now that no task waits for (their attempt timed out, or the compile budget was exceeded): "+
				"wazero cannot stop a compilation, each uses a CPU until it ends.",
			prometheus.GaugeValue, func(s SandboxStats) float64 { return float64(s.CompilingAbandoned) }),
		m("stint_sandbox_compile_waiting",
			"Compilations waiting for their turn (two run at once) or for compile memory (limits.compile_memory), not yet in wazero.",
			prometheus.GaugeValue, func(s SandboxStats) float64 { return float64(s.CompileWaiting) }),
		m("stint_sandbox_compile_timeouts_total", "Modules refused because compiling them took longer than sandbox.compile_timeout.",
			prometheus.CounterValue, func(s SandboxStats) float64 { return float64(s.CompileTimeouts) }),
		m("stint_sandbox_abandoned_runs_total",
			"Runs the stop watchdog abandoned: the guest had not ended sandbox.stop_watchdog after its forced stop.",
			prometheus.CounterValue, func(s SandboxStats) float64 { return float64(s.Abandoned) }),
		m("stint_sandbox_stray_runs",
			"Abandoned runs whose guest still runs now, each on a goroutine of its own (and maybe a CPU): a restart ends them.",
			prometheus.GaugeValue, func(s SandboxStats) float64 { return float64(s.Stray) }),
		m("stint_sandbox_refused_modules",
			"Modules refused for good: over the compile budget, or abandoned twice by the stop watchdog.",
			prometheus.GaugeValue, func(s SandboxStats) float64 { return float64(s.Refused) }),
	}}
}

// Describe implements prometheus.Collector.
func (c *stoppingCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector.
func (c *stoppingCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.value(st))
	}
}
