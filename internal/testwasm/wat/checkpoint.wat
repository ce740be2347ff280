;; checkpoint: if the attempt started with a checkpoint (checkpoint_size >= 0),
;; loads it (up to 64 KiB) and writes it to stdout; then saves the 5 bytes
;; "saved". Exits 3 if the save returned non-zero, else 0.
(module
  (import "stint" "checkpoint_size" (func $checkpoint_size (result i32)))
  (import "stint" "checkpoint_load" (func $checkpoint_load (param i32 i32) (result i32)))
  (import "stint" "checkpoint_save" (func $checkpoint_save (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  ;; "saved" at 16; iovec at 0; bytes written at 8; checkpoint buffer at 65536 (64 KiB).
  (memory (export "memory") 2)
  (data (i32.const 16) "saved")
  (func $start (export "_start")
    (local $size i32)
    (local $n i32)
    (local.set $size (call $checkpoint_size))
    (if (i32.ge_s (local.get $size) (i32.const 0))
      (then
        (if (i32.gt_u (local.get $size) (i32.const 65536))
          (then (local.set $size (i32.const 65536))))
        (local.set $n (call $checkpoint_load (i32.const 65536) (local.get $size)))
        (if (i32.gt_s (local.get $n) (i32.const 0))
          (then
            (i32.store (i32.const 0) (i32.const 65536))
            (i32.store (i32.const 4) (local.get $n))
            (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))))
    (if (call $checkpoint_save (i32.const 16) (i32.const 5))
      (then (call $proc_exit (i32.const 3))))
    (call $proc_exit (i32.const 0))))
