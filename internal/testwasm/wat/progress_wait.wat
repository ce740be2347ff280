;; progress_wait: reports progress (1, 2), then loops until
;; stint.stop_requested returns 1 and exits 75 (interrupted). A long task
;; whose progress the runner must write while it runs.
(module
  (import "stint" "progress" (func $progress (param i64 i64)))
  (import "stint" "stop_requested" (func $stop_requested (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (func $start (export "_start")
    (call $progress (i64.const 1) (i64.const 2))
    (loop $wait
      (br_if $wait (i32.ne (call $stop_requested) (i32.const 1))))
    (call $proc_exit (i32.const 75))))
