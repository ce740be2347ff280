;; loop: writes "loop\n" to stderr (so a test or benchmark knows it is
;; running), then spins forever in a tight loop (no calls). Only a forced
;; stop ends it.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "loop\n")
  (func $start (export "_start")
    ;; iovec at 0 {buf=16, len=5}; bytes written at 8.
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 5))
    (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8)))
    (loop $forever
      (br $forever))))
