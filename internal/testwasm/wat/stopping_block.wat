;; stopping_block: reads a host path from stdin, says "opening fifo" on
;; stderr and reports progress 1 of 1 (signals for tests), then calls
;; stint_test.block with the path (internal/testwasm/blockhost): a host
;; function that opens that named pipe and reads it until EOF, ignoring
;; every stop, as a host call that ignores its context would. A guest no
;; forced stop can end, until the test writes to the pipe; it then exits 0.
;; No loop header comes between the signals and the call, so a forced stop
;; after them cannot end the guest before it blocks.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "stint" "progress" (func $progress (param i64 i64)))
  (import "stint_test" "block" (func $block (param i32 i32)))
  (memory (export "memory") 1)
  ;; 0: stdin iovec {1024, 4096}; 16: bytes read; 48: the message; 64: its
  ;; iovec; 72: bytes written; 1024: the path.
  (data (i32.const 48) "opening fifo\n")
  (func $start (export "_start")
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 4096))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 16)))
    (i32.store (i32.const 64) (i32.const 48))
    (i32.store (i32.const 68) (i32.const 13))
    (drop (call $fd_write (i32.const 2) (i32.const 64) (i32.const 1) (i32.const 72)))
    (call $progress (i64.const 1) (i64.const 1))
    (call $block (i32.const 1024) (i32.load (i32.const 16)))))
