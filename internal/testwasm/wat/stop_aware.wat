;; stop_aware: loops until stint.stop_requested returns 1, then exits 75
;; (interrupted).
(module
  (import "stint" "stop_requested" (func $stop_requested (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (func $start (export "_start")
    (loop $wait
      (br_if $wait (i32.ne (call $stop_requested) (i32.const 1))))
    (call $proc_exit (i32.const 75))))
