;; stdin: reads fd 0 until EOF (a read of 0 bytes), discarding the data, then
;; exits 0. If fd_read fails it exits 1. The sandbox must end a read that never
;; returns on stop.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  ;; iovec at 0 {buf=1024, len=4096}; bytes read at 16.
  (func $start (export "_start")
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 4096))
    (loop $read
      (if (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 16))
        (then (call $proc_exit (i32.const 1))))
      (br_if $read (i32.load (i32.const 16))))
    (call $proc_exit (i32.const 0))))
