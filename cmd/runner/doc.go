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
package main
