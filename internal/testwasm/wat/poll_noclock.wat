;; poll_noclock: calls poll_oneoff with one fd_read subscription on fd 0 and
;; no clock subscription, then exits 0. (wazero v1.12.0 with its default
;; nanosleep blocks forever here; the sandbox must bound it.)
(module
  (import "wasi_snapshot_preview1" "poll_oneoff"
    (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  ;; subscription (48 bytes) at 0: userdata u64 @0, tag u8 @8 (1 = fd_read),
  ;; fd u32 @16. event out at 64; number of events at 128.
  (func $start (export "_start")
    (i64.store (i32.const 0) (i64.const 7))
    (i32.store8 (i32.const 8) (i32.const 1))
    (i32.store (i32.const 16) (i32.const 0))
    (drop (call $poll_oneoff (i32.const 0) (i32.const 64) (i32.const 1) (i32.const 128)))
    (call $proc_exit (i32.const 0))))
