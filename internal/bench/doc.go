// Package bench measures Stint: the cost of one task against bare wazero,
// how fast a stop ends each kind of blocked guest, the durable queue's
// throughput and latency, what close-on-context-done costs compute-heavy
// guests, how long `runner serve` takes to shut down with stuck and
// cooperative tasks running, and what background snapshots cost a long
// task with a large memory and the queue's short tasks (issue 39).
//
// The benchmarks are run by the stintbench command (internal/bench/cmd/stintbench,
// `make bench`), which prints Markdown tables and writes the raw samples to
// a directory as JSON and CSV; docs/benchmarks.md holds a recorded run. The
// Go micro-benchmarks in this package (go test -bench . ./internal/bench) guard the
// per-task cost against regressions.
//
// Every comparison runs its variants interleaved in one process (A B A B),
// so that a noisy, shared machine disturbs them alike; the tables give
// medians, p50 and p99, and ratios, never a lone absolute time.
//
// The peer comparisons (Extism, wasmtime-go, ...) live in bench/peers, a
// module of their own so that the main module never depends on them.
package bench
