;; cpecho: writes the checkpoint its attempt started with (up to 192 KiB) to
;; stdout and exits 0; with no checkpoint, exits 3.
(module
  (import "stint" "checkpoint_size" (func $checkpoint_size (result i32)))
  (import "stint" "checkpoint_load" (func $checkpoint_load (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  ;; iovec at 0, bytes written at 8, the checkpoint at 1024.
  (memory (export "memory") 4)
  (func $start (export "_start")
    (local $size i32)
    (local.set $size (call $checkpoint_size))
    (if (i32.lt_s (local.get $size) (i32.const 0))
      (then (call $proc_exit (i32.const 3))))
    (drop (call $checkpoint_load (i32.const 1024) (local.get $size)))
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (local.get $size))
    (loop $write
      (if (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))
        (then (call $proc_exit (i32.const 1))))
      (i32.store (i32.const 0) (i32.add (i32.load (i32.const 0)) (i32.load (i32.const 8))))
      (i32.store (i32.const 4) (i32.sub (i32.load (i32.const 4)) (i32.load (i32.const 8))))
      (br_if $write (i32.load (i32.const 4))))))
