// Command runner runs untrusted WebAssembly tasks in wazero sandboxes, from
// a durable queue, and stops them without losing work.
//
//	runner run MODULE.wasm        run one task now (no queue)
//	runner batch MODULE.wasm --in DIR --out DIR   run it over every file of a folder (resumable)
//	runner call MODULE.wasm FUNC  call one export of a plugin once (bytes in, bytes out)
//	runner serve                  work the queue; SIGTERM stops it in phases
//	runner submit MODULE.wasm     queue a task (--wait for its result)
//	runner tasks list|stats|show|cancel|retry|delete|result|prune
//	runner tasks pause|resume QUEUE...   stop and restart the claims of queues
//	runner runners                the runners that work the store (alive, draining or silent)
//	runner runners drain OWNER    ask a runner to stop claiming (it finishes what it runs)
//	runner schedule add|list|remove|pause|resume|run   periodic tasks kept in the store
//	runner tenants                the tenants' weights and limits, and their running tasks
//	runner tenants weight TENANT N   set a tenant's weight in fair claims (1 to 1000)
//	runner tenants max-running TENANT N   the most of its tasks running at once (0: no limit)
//	runner tenants quota TENANT UNITS   the most work units its attempts do per period (0: none)
//	runner tenants rate TENANT R  the most of its tasks started a second (0: no limit)
//	runner queues                 the queues' limits across every runner, and their running tasks
//	runner queues max-running QUEUE N   the most of its tasks running at once (0: no limit)
//	runner queues quota QUEUE UNITS   the most work units its attempts do per period (0: none)
//	runner queues rate QUEUE R    the most of its tasks started a second (0: no limit)
//	runner cache list|prune       the compilation cache every command shares: show it, trim it
//	runner config                 the effective configuration and its sources
//	runner config init [PATH]     a commented YAML file with every key at its default
//	runner completion bash|zsh|fish|powershell   shell completion (cobra's; task ids, states, queues)
//	runner version
//
// (Every command is listed here: TestDocNamesEveryCommand.)
//
// The program is split so that it can be tested in-process: main only calls
// run(ctx, args, stdin, stdout, stderr), which builds the cobra commands
// around one explicit viper instance (defaults, then the YAML file, then
// RUNNER_* env, then flags) and a zap logger. Each command's error carries
// its exit code; see `runner run --help` for the codes of task outcomes.
// runner serve is a stint.Runner under a shutdown.Coordinator.
//
// The files (every one is named here: internal/maps checks it):
//   - main.go calls run; root.go holds run, the root command, exit codes
//     (exitcodes.go: the one table from outcome kind to exit code),
//     the setup every command shares, and runner config; version.go runner
//     version.
//   - One file per command: runcmd.go (run), batch*.go (batch: its inputs,
//     source and submit, outputs made durable in groups, with links on Linux,
//     progress, summary, and termSafe, the escaping of what it prints),
//     call.go (call; callwork.go its --work, call_try.go its --input-text
//     and --loop), serve.go (gcfloor.go its heap floor and the heap it asks
//     huge pages for, as batch does; hugepages_linux.go and
//     hugepages_other.go the asking), submit.go, tasks.go (tasks and its
//     subcommands), tasks_ops.go (retry, cancel and delete by
//     id or filter, pause and resume), prune.go (tasks prune), schedule.go
//     (runners, and schedule and its subcommands), tenants.go (tenants, its
//     subcommands, and the tenant_* keys), queues.go (queues and its
//     subcommands, which share the tenants' setters), configinit.go (config init),
//     completion.go (what shell completion offers).
//   - Their wiring: config.go (the table of keys), flags.go (which command
//     has which key's flag), taskflags.go (the task flags of run and submit),
//     units.go (sizes in flags; printed by internal/bytesize), store.go (the store, opened by URL through
//     tasks/storeurl: no backend is named here), http.go (the API),
//     sdnotify.go (what serve tells systemd: READY=1, STOPPING=1, and
//     WATCHDOG=1 while its API answers GET /healthz in process), files.go
//     (the data directory's permissions), cache.go and cache_atime_*.go (the
//     one compilation cache every command shares: sandbox.cache_dir,
//     data_dir/cache when data_dir is set, else the user's; pruned to
//     sandbox.cache_max_bytes, least recently used first), cachecmd.go
//     (runner cache list and prune), diag.go (STINT_CPUPROFILE, STINT_TRACE and run's
//     debug log of its phases), testhooks_*.go (the end-to-end tests' build,
//     -tags stint_testhooks: among others a runner frozen on purpose).
//   - Reading and printing anyone's bytes: internal/bytesize's ReadAtMost
//     reads with a cap (batch's inputs are read by package batch), checkpointfile*.go (run --checkpoint's file, reached through
//     its directory), snapshotfile.go (run --snapshot's file), termtext.go (the other commands'
//     terminal-safe text).
package main
