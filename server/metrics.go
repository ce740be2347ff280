package server

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
)

// poolCollector reads the pool's counters at scrape time, so the values are
// never stale and nothing has to push them.
type poolCollector struct {
	stats    func() tasks.PoolStats
	running  *prometheus.Desc
	attempts *prometheus.Desc
}

func newPoolCollector(stats func() tasks.PoolStats) *poolCollector {
	return &poolCollector{
		stats: stats,
		running: prometheus.NewDesc("stint_pool_running",
			"Attempts running in the worker pool now.", nil, nil),
		attempts: prometheus.NewDesc("stint_pool_attempts_total",
			"Attempts the worker pool ended, by how they ended: finished (on their own, any outcome), "+
				"interrupted (stopped cooperatively on a shutdown), forced (ended by the forced stop), "+
				"lost (lease taken over or result refused).",
			[]string{"result"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.running
	ch <- c.attempts
}

// Collect implements prometheus.Collector.
func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, float64(st.Running))
	for _, r := range []struct {
		label string
		n     int
	}{
		{"finished", st.Finished},
		{"interrupted", st.Interrupted},
		{"forced", st.Forced},
		{"lost", st.Lost},
	} {
		ch <- prometheus.MustNewConstMetric(c.attempts, prometheus.CounterValue, float64(r.n), r.label)
	}
}

// sandboxCollector reads the sandbox runtime's counters at scrape time.
type sandboxCollector struct {
	stats                                           func() sandbox.Stats
	modules, compilations, evictions, cacheFailures *prometheus.Desc
}

func newSandboxCollector(stats func() sandbox.Stats) *sandboxCollector {
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
		Help: "HTTP requests served, by method, route pattern (\"unmatched\" for none) and status code.",
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
		cs = append(cs, newSandboxCollector(deps.SandboxStats))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, nil, fmt.Errorf("server: metrics: %w", err)
		}
	}
	return reg, requests, nil
}
