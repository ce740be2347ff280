;; sleep: writes "sleep\n" to stderr, then sleeps one hour with poll_oneoff (one relative clock subscription on
;; the monotonic clock), then exits 0. The sandbox must end the sleep on stop.
(module
  (import "wasi_snapshot_preview1" "poll_oneoff"
    (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 256) "sleep\n")
  ;; subscription (48 bytes) at 0: userdata u64 @0, tag u8 @8 (0 = clock),
  ;; clock id u32 @16, timeout u64 @24 (ns), precision u64 @32, flags u16 @40.
  ;; event (32 bytes) out at 64; number of events at 128.
  (func $start (export "_start")
    ;; "sleep\n" to stderr: iovec at 200 {buf=256, len=6}, written count at 208.
    (i32.store (i32.const 200) (i32.const 256))
    (i32.store (i32.const 204) (i32.const 6))
    (drop (call $fd_write (i32.const 2) (i32.const 200) (i32.const 1) (i32.const 208)))
    (i64.store (i32.const 0) (i64.const 42))
    (i32.store8 (i32.const 8) (i32.const 0))
    (i32.store (i32.const 16) (i32.const 1))
    (i64.store (i32.const 24) (i64.const 3600000000000))
    (i64.store (i32.const 32) (i64.const 0))
    (i32.store16 (i32.const 40) (i32.const 0))
    (drop (call $poll_oneoff (i32.const 0) (i32.const 64) (i32.const 1) (i32.const 128)))
    (call $proc_exit (i32.const 0))))
