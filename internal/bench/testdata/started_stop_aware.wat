;; started_stop_aware: saves a one-byte checkpoint (so that whoever watches
;; the store sees the guest has really started), then loops until
;; stint.stop_requested returns 1 and exits 75 (interrupted). Used by the
;; shutdown benchmark.
(module
  (import "stint" "checkpoint_save" (func $checkpoint_save (param i32 i32) (result i32)))
  (import "stint" "stop_requested" (func $stop_requested (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "s")
  (func $start (export "_start")
    (drop (call $checkpoint_save (i32.const 0) (i32.const 1)))
    (loop $wait
      (br_if $wait (i32.ne (call $stop_requested) (i32.const 1))))
    (call $proc_exit (i32.const 75))))
