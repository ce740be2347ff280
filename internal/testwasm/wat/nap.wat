;; nap: saves the 3-byte checkpoint "nap" (so that a test sees it has started), sleeps one second with
;; poll_oneoff (one relative clock subscription on the monotonic clock), then writes "nap\n" to stdout and exits
;; 0. A short task that takes the same wall-clock time on a loaded machine: the shutdown tests use it as the task
;; that must finish during the drain.
(module
  (import "stint" "checkpoint_save" (func $checkpoint_save (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff"
    (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 256) "nap\n")
  ;; subscription (48 bytes) at 0: userdata u64 @0, tag u8 @8 (0 = clock),
  ;; clock id u32 @16, timeout u64 @24 (ns), precision u64 @32, flags u16 @40.
  ;; event (32 bytes) out at 64; number of events at 128.
  (func $start (export "_start")
    (drop (call $checkpoint_save (i32.const 256) (i32.const 3)))
    (i64.store (i32.const 0) (i64.const 7))
    (i32.store8 (i32.const 8) (i32.const 0))
    (i32.store (i32.const 16) (i32.const 1))
    (i64.store (i32.const 24) (i64.const 1000000000))
    (i64.store (i32.const 32) (i64.const 0))
    (i32.store16 (i32.const 40) (i32.const 0))
    (drop (call $poll_oneoff (i32.const 0) (i32.const 64) (i32.const 1) (i32.const 128)))
    ;; "nap\n" to stdout: iovec at 200 {buf=256, len=4}, written count at 208.
    (i32.store (i32.const 200) (i32.const 256))
    (i32.store (i32.const 204) (i32.const 4))
    (drop (call $fd_write (i32.const 1) (i32.const 200) (i32.const 1) (i32.const 208)))))
