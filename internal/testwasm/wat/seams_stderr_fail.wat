;; seams_stderr_fail: writes 5000 bytes to stderr (4999 'e' then a newline),
;; then "boom: the last line\n", and exits with code 1. The attempt keeps
;; the tail of its stderr: the last line, not the first bytes.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "boom: the last line\n")
  ;; iovecs at 0: {buf=1024, len=5000}, {buf=64, len=20}; bytes written at 16.
  (func $start (export "_start")
    (memory.fill (i32.const 1024) (i32.const 0x65) (i32.const 4999))
    (i32.store8 (i32.const 6023) (i32.const 10))
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 5000))
    (i32.store (i32.const 8) (i32.const 64))
    (i32.store (i32.const 12) (i32.const 20))
    (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 2) (i32.const 16)))
    (call $proc_exit (i32.const 1))))
