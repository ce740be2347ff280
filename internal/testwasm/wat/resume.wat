;; resume: on a first attempt (no checkpoint), reports progress (1, 2),
;; saves the checkpoint "cp" and loops until stint.stop_requested returns 1,
;; then exits 75 (interrupted). An attempt that starts with a checkpoint
;; writes "resumed from " and the checkpoint to stdout and exits 0. Exits 3
;; if the save returned non-zero.
(module
  (import "stint" "checkpoint_size" (func $checkpoint_size (result i32)))
  (import "stint" "checkpoint_load" (func $checkpoint_load (param i32 i32) (result i32)))
  (import "stint" "checkpoint_save" (func $checkpoint_save (param i32 i32) (result i32)))
  (import "stint" "stop_requested" (func $stop_requested (result i32)))
  (import "stint" "progress" (func $progress (param i64 i64)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  ;; iovec at 0; bytes written at 8; "cp" at 16; "resumed from " at 32,
  ;; the loaded checkpoint right after it (at 45, up to 1 KiB).
  (memory (export "memory") 1)
  (data (i32.const 16) "cp")
  (data (i32.const 32) "resumed from ")
  (func $start (export "_start")
    (local $size i32)
    (local.set $size (call $checkpoint_size))
    (if (i32.ge_s (local.get $size) (i32.const 0))
      (then
        (if (i32.gt_u (local.get $size) (i32.const 1024))
          (then (local.set $size (i32.const 1024))))
        (local.set $size (call $checkpoint_load (i32.const 45) (local.get $size)))
        (i32.store (i32.const 0) (i32.const 32))
        (i32.store (i32.const 4) (i32.add (i32.const 13) (local.get $size)))
        (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
        (call $proc_exit (i32.const 0))))
    (call $progress (i64.const 1) (i64.const 2))
    (if (call $checkpoint_save (i32.const 16) (i32.const 2))
      (then (call $proc_exit (i32.const 3))))
    (loop $wait
      (br_if $wait (i32.ne (call $stop_requested) (i32.const 1))))
    (call $proc_exit (i32.const 75))))
