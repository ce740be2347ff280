// Package server is Stint's HTTP API: tasks and modules under /v1/,
// health and readiness probes, Prometheus metrics, and a dashboard (HTML)
// at / whose actions are POST forms.
//
//	srv, err := server.New(server.Config{Addr: "127.0.0.1:8080", Token: token, Logger: log},
//		server.Deps{Store: store, Submit: pool.Submit, Ready: coord.Ready,
//			Stats: func() server.PoolStats { return server.PoolStats(pool.Stats()) }})
//	if err := srv.Start(ctx); err != nil { ... } // listens; serves in a goroutine
//	coord.AddHook(shutdown.Hook{Name: "http", Priority: shutdown.PriorityHTTP, Run: srv.Shutdown})
//
// The server is not a shutdown.Workload: it keeps accepting submissions
// during a stop (they are only queued, and run after the restart) and
// reports readiness false from the first phase on, so a load balancer stops
// sending traffic. Stop it with a cleanup hook that runs before the hook
// that closes the store.
//
// # Endpoints
//
// Every body is JSON, except /healthz ("ok"), /metrics (Prometheus text),
// a module upload and a task's input and result (raw bytes). An error is
// {"error": "..."} with its status: 400 bad input (malformed JSON, unknown
// field, bad id or query parameter, not a wasm module), 401 missing or
// wrong token, 403 cross-origin request, 404 unknown task, module or
// endpoint, 405 wrong method, 409 the task's state does not allow it, 413
// body too large or a spec field over its cap (a *tasks.LimitError: args,
// env, queue name, idempotency key, mounts; the message names the limit),
// 415 wrong Content-Type, 421 Host not loopback (no
// token), 422 invalid spec (tasks.ErrInvalidSpec: bad values, a mount
// outside the allow-list, a limit over the runner's maximum), 503 busy
// (with Retry-After), store locked or request cancelled, 500 otherwise
// (details only in the log).
//
//	GET  /healthz                  200 "ok" while the process lives
//	GET  /readyz                   200 {"ready":true} or 503 {"ready":false}
//	GET  /metrics                  Prometheus exposition (from another address than
//	                               loopback: with the token, unless Config.MetricsPublic)
//	POST /v1/sessions/revoke       {"revoked":true}: every dashboard session ends
//	                               (Server.RevokeSessions)
//	POST /v1/modules               body: wasm bytes (application/wasm or
//	                               application/octet-stream) → 201 {"sha256":"...","size":n}
//	POST /v1/tasks                 body: a task spec (application/json) → 201 task
//	                               (200 with the existing task when its idempotency_key was used)
//	GET  /v1/tasks                 ?state=&queue=&label=&after=&limit= → {"tasks":[...],"next_after":id}
//	                               (state=claimed: no worker began them; running: claimed or begun)
//	GET  /v1/tasks/{id}            task
//	GET  /v1/tasks/{id}/attempts   {"attempts":[...]}, oldest first
//	GET  /v1/tasks/{id}/input      the stored input, application/octet-stream
//	GET  /v1/tasks/{id}/result     the stored stdout, application/octet-stream;
//	                               409 unless the task succeeded
//	POST /v1/tasks/{id}/cancel     task (cancelled, or still running with
//	                               cancel_requested until its worker ends it)
//	POST /v1/tasks/{id}/retry      task (queued again; dead or cancelled only)
//	DELETE /v1/tasks/{id}          {"deleted":id}; 409 for a running task (cancel it first)
//	POST /v1/tasks/bulk            body: a BulkRequest {"action":"retry|cancel|delete",
//	                               "state","queue","labels":{k:v},"older_than":"1h","all",
//	                               "dry_run"} → {"action","matched","done","skipped","dry_run"};
//	                               send it with "dry_run":true first to show the count
//	GET  /v1/queues                {"queues":[{"queue","paused","paused_at","counts":{state:n},
//	                               "limits":{"max_running","running","claimed","queued","work_quota",...}}]}
//	POST /v1/queues/{queue}/pause  {"queue","paused":true}: no runner claims its tasks
//	POST /v1/queues/{queue}/resume {"queue","paused":false}
//	POST /v1/queues/{queue}/limits {"max_running","rate","work_quota","work_period":"1h"} (those given)
//	                               -> the queue's limits, across every runner
//	GET  /v1/tenants               {"tenants":{name:{"weight","max_running","running","claimed","work_quota","work_period","work_used","throttled_until","rate","tokens"}}}
//	POST /v1/tenants               {"tenant","weight","max_running","rate","work_quota","work_period":"1h"} (those given) -> the tenant
//
// POST /v1/modules takes ?name=NAME (a file name, up to 255 bytes): kept
// with the module (tasks.Store.NameModule) and shown instead of its hash. A
// task's limits come back with timeout as a duration string ("30s").
//
//	GET  /v1/runners               {"runners":[...]}: the runners recorded in the store
//	                               (RunnerView: status alive, draining or silent)
//	GET  /v1/schedules             {"schedules":[...]} (ScheduleView, with next_run)
//	POST /v1/schedules             body: {"name","every":"10m" or "cron":"0 * * * *",
//	                               "paused","spec":{a task spec}} → 201 schedule;
//	                               409 name taken ("a schedule named N exists ..."),
//	                               422 bad period or spec
//	GET  /v1/schedules/{name}      schedule
//	POST /v1/schedules/{name}/pause, /resume → schedule
//	DELETE /v1/schedules/{name}    204 (its tasks stay)
//
// The dashboard (docs/dashboard.md), server-rendered HTML without scripts:
//
//	GET  /                         overview: runner state, counts by queue and state,
//	                               running tasks with progress, newest dead tasks with stderr
//	GET  /tasks                    ?state=&queue=&before= tasks newest first, 50 a page
//	GET  /tasks/{id}               one task and its attempts
//	GET  /runners                  the runners that work the store
//	GET  /schedules                the schedules, next runs, and buttons
//	                               (POST /schedules/{name}/pause|resume|remove)
//	GET  /schedules/new            the form that adds a schedule; POST /schedules
//	                               (name, module, every or cron, queue, priority,
//	                               max_attempts, timeout, labels, args, paused): 303
//	                               to /schedules
//	POST /tasks/{id}/retry|cancel|delete   a task's buttons; 303 to its page
//	POST /tasks/bulk               the bulk form: without confirm=yes it shows
//	                               the count and a confirmation, with it acts
//	POST /queues/{queue}/pause|resume      the overview's buttons
//	GET  /login, POST /login       the sign-in form (with a token); POST /logout
//	GET  /dashboard.css            its stylesheet
//
// With a token, a page takes the bearer header, the session cookie that
// signing in sets (HttpOnly, SameSite=Strict, valid for the pages only,
// never for /v1/; it ends after Config.SessionIdle without a request,
// Config.SessionMax after its sign-in, or at RevokeSessions: sessions.go),
// or ?token= once, which sets the cookie and redirects to the page
// without it. Failed sign-ins are limited per remote address (429). The counts are
// tasks.Store.CountTasks'.
//
// /input and /result send their bytes with a Content-Length; HEAD gives
// the headers alone. cancel, retry, delete, pause and resume take no body
// (or application/json). The dashboard's action forms take the session
// cookie or the bearer header (never ?token=), and the cross-origin check
// refuses them from another site's page as it refuses the API's POSTs.
//
// # Security
//
// When Config.Token is set, every /v1/ request needs
// "Authorization: Bearer <token>"; the probes stay open, and /metrics to
// loopback addresses (to every one with Config.MetricsPublic).
// Without a token New accepts only a loopback Config.Addr (ErrNoToken
// otherwise), and every request must name a loopback Host (421), so that
// a web page cannot reach the API by rebinding its DNS name to 127.0.0.1.
// A POST that a browser marks as cross-site (Sec-Fetch-Site, or an Origin
// that is not the Host) gets 403 (http.CrossOriginProtection), and a body
// of any other Content-Type than the route's gets 415 before it is read.
//
// Memory: a body is read only up to Config.MaxModuleBytes (413), and
// Config.MaxInflightBytes bounds the bytes all requests hold at once
// (bodies, and the stored input and result that /input, /result, cancel
// and retry read whole); Config.MaxConcurrent bounds the /v1/ requests in
// progress. Past either, 503 with Retry-After, before the body is read.
//
// Deadlines are per request: 10 s for the headers (at most 64 KiB), for a
// body 10 s plus its size at 512 KiB/s, for the answer 60 s more (plus its
// size at 512 KiB/s for an input or result); idle connections close after
// 60 s.
//
// # Task spec
//
// The body of POST /v1/tasks is a tasks.Spec in JSON; only "module" is
// required:
//
//	{
//	  "module": "<hex sha256 from POST /v1/modules>",
//	  "input": "aGVsbG8=",              // stdin, base64 (JSON []byte)
//	  "args": ["--n", "10"],
//	  "env": {"MODE": "fast"},
//	  "mounts": [{"host_path": "/data/in", "guest_path": "/in", "writable": false}],
//	  "limits": {"memory_bytes": 67108864, "timeout": "30s",
//	             "stdout": 1048576, "stderr": 65536, "checkpoint": 1048576,
//	             "disk_bytes": 1073741824, "disk_files": 10000, // writable mounts' budget
//	             "work": 0},                 // work budget in work units (0: the runner's, off by default)
//	  "max_attempts": 3, "priority": 0, "queue": "default",
//	  "tenant": "acme",                 // fair claims between tenants (docs/operations.md)
//	  "idempotency_key": "order-42", "run_at": "2030-01-02T15:04:05Z",
//	  "export": "greet"                  // optional: a plugin call instead of _start (docs/plugins.md)
//	}
//
// Sizes are integers, in bytes. limits.timeout takes a Go duration string
// ("30s", "5m") or an integer number of nanoseconds (time.Duration's own
// JSON); tasks are returned with the string ("30s"). A zero or absent limit means
// the runner's default; a limit over the runner's maximum (limits.max_* in
// the runner's configuration) is refused (400). Unknown fields are refused
// (400), so a misspelt limit is never silently the default.
//
// # Tasks in responses
//
// A task is TaskView: tasks.Task in JSON (id, the spec's fields, state,
// attempt, failures, lease_owner, lease_expiry, started_at (its claim),
// began_at (when a worker of its runner began it), cancel_requested,
// checkpoint_size (-1 when there is none), progress_done, progress_total,
// last_error, created_at, updated_at, finished_at, input_size, result_size;
// unset times such as finished_at and lease_expiry are left out) without
// its input and result bytes: input_size and result_size give their
// lengths, /v1/tasks/{id}/input and /result serve them. Its state is
// "claimed" while a runner (lease_owner) holds it and none of its workers
// has begun it (claimed ahead), "running" once one has (tasks.Task.Shown).
//
// GET /v1/tasks returns tasks by ascending id; limit is 1 to 1000 (default
// 100). When a page is full, next_after is the after= of the next page.
// label=key=value (repeatable, up to 16) keeps the tasks that carry every
// one of those labels; labels are in no index, so such a request reads at
// most 10,000 tasks: past them it returns what it found, perhaps fewer
// than limit or none, with next_after set to go on. Only a page without
// next_after is the last.
//
// # Metrics
//
// /metrics serves a registry of the server's own (never the global one;
// Server.Registry returns it):
//
//	stint_ready                                1 while ready, 0 from the first shutdown phase on
//	stint_pool_running                         attempts in flight now (claimed, running, being recorded)
//	stint_pool_held                            of those, tasks claimed ahead waiting for a worker
//	stint_pool_given_back_total                tasks claimed ahead given back to the queue
//	stint_pool_attempts_total{result=...}      finished | interrupted | forced | lost
//	stint_http_requests_total{method,route,code}   route: the pattern's path ("/v1/tasks/{id}")
//	stint_http_inflight_bytes                  bytes held by requests now (MaxInflightBytes)
//	stint_http_inflight_requests               /v1/ requests in progress (MaxConcurrent)
//	stint_sandbox_modules                      compiled modules kept in memory
//	stint_sandbox_compilations_total           modules compiled or loaded from the cache
//	stint_sandbox_evictions_total              modules dropped to stay within the limit
//	stint_sandbox_cache_failures_total         compilations without the on-disk cache (it failed)
//	stint_tasks{state}                         tasks in the store (read at scrape time; claimed apart from running)
//	stint_queue_tasks{queue,state}             by queue (SQLite: succeeded in stint_tasks only)
//	stint_runners{status}                      alive | draining | silent runners in the store
//	stint_schedules{status}                    active | paused
//	stint_schedule_next_run_timestamp_seconds{schedule}
//	stint_store_scrape_errors                  1 when the scrape could not read the store
//	stint_attempts_ended_total{queue,outcome}  attempts recorded, by outcome kind
//	stint_attempt_work_units_total{queue}      work units their guests did
//	stint_attempt_duration_seconds{queue}      histogram
//	stint_queue_wait_seconds{queue}            histogram: ready to started
//	stint_build_info{version,go_version}       1
//	go_*, process_*                            Go runtime and process collectors
//
// The attempt metrics are fed by Server.ObserveAttemptStart and
// ObserveAttemptEnd (runner serve calls them from the pool's events);
// deploy/prometheus and deploy/grafana use these metrics, and a test
// checks that every name they use is exported.
//
// The pool and sandbox metrics are read from Deps.Stats and
// Deps.SandboxStats at scrape time, and are absent when those are nil.
package server
