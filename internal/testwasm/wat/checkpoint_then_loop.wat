;; checkpoint_then_loop: saves the checkpoint "cp1", loops until
;; stint.stop_requested returns 1, saves "cp2" and exits 75 (interrupted).
;; Exits 3 if either save returned non-zero.
(module
  (import "stint" "checkpoint_save" (func $checkpoint_save (param i32 i32) (result i32)))
  (import "stint" "stop_requested" (func $stop_requested (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "cp1")
  (data (i32.const 32) "cp2")
  (func $start (export "_start")
    (if (call $checkpoint_save (i32.const 16) (i32.const 3))
      (then (call $proc_exit (i32.const 3))))
    (loop $wait
      (br_if $wait (i32.ne (call $stop_requested) (i32.const 1))))
    (if (call $checkpoint_save (i32.const 32) (i32.const 3))
      (then (call $proc_exit (i32.const 3))))
    (call $proc_exit (i32.const 75))))
