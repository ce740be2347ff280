// Command runner runs untrusted WebAssembly tasks in wazero sandboxes, from
// a durable queue, and stops them without losing work.
//
//	runner run MODULE.wasm     run one task now (no queue)
//	runner serve               work the queue; SIGTERM stops it in phases
//	runner submit MODULE.wasm  queue a task (--wait for its result)
//	runner tasks list|show|cancel|retry|result
//	runner config              the effective configuration and its sources
//	runner version
//
// The program is split so that it can be tested in-process: main only calls
// run(ctx, args, stdin, stdout, stderr), which builds the cobra commands
// around one explicit viper instance (defaults, then the YAML file, then
// RUNNER_* env, then flags) and a zap logger. Each command's error carries
// its exit code; see `runner run --help` for the codes of task outcomes.
//
// One file per command (run: runcmd.go, serve.go, submit.go, tasks.go,
// prune.go; version and config in root.go) plus their wiring: config.go
// (the table of keys), store.go (the store, opened by URL through
// tasks/storeurl: no backend is named here), http.go (the API). runner
// serve is a stint.Runner under a shutdown.Coordinator.
package main
