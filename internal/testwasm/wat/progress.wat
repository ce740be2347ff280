;; progress: reports progress (3, 10), then writes "deadline\n" to stdout if
;; stint.deadline_ms returns more than 0, else "none\n"; exits 0.
(module
  (import "stint" "progress" (func $progress (param i64 i64)))
  (import "stint" "deadline_ms" (func $deadline_ms (result i64)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  ;; iovec at 0; bytes written at 8; "deadline\n" at 16; "none\n" at 32.
  (data (i32.const 16) "deadline\n")
  (data (i32.const 32) "none\n")
  (func $start (export "_start")
    (call $progress (i64.const 3) (i64.const 10))
    (if (i64.gt_s (call $deadline_ms) (i64.const 0))
      (then
        (i32.store (i32.const 0) (i32.const 16))
        (i32.store (i32.const 4) (i32.const 9)))
      (else
        (i32.store (i32.const 0) (i32.const 32))
        (i32.store (i32.const 4) (i32.const 5))))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
    (call $proc_exit (i32.const 0))))
