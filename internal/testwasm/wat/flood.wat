;; flood: writes a 4 KiB buffer of 'x' to fd 1 (stdout) forever, ignoring
;; write errors. Only an output limit or a stop ends it.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  ;; iovec at 0 {buf=1024, len=4096}; bytes written at 16.
  (func $start (export "_start")
    (memory.fill (i32.const 1024) (i32.const 0x78) (i32.const 4096))
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 4096))
    (loop $write
      (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 16)))
      (br $write))))
