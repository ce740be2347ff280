;; stop_aware_ready: the stop_aware fixture (internal/testwasm/wat) with a ready
;; line: writes "stop_aware\n" to stderr, then loops until
;; stint.stop_requested returns 1, then exits 75 (interrupted). The line lets
;; the stop benchmark close Spec.Stop only once the guest is in its loop.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "stint" "stop_requested" (func $stop_requested (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "stop_aware\n")
  (func $start (export "_start")
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 11))
    (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8)))
    (loop $wait
      (br_if $wait (i32.ne (call $stop_requested) (i32.const 1))))
    (call $proc_exit (i32.const 75))))
