;; stop_ignore: writes "stop_ignore\n" to stderr, then calls
;; stint.stop_requested in a loop forever and ignores the answer (a call-heavy
;; loop). Only a forced stop ends it.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "stint" "stop_requested" (func $stop_requested (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "stop_ignore\n")
  (func $start (export "_start")
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 12))
    (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8)))
    (loop $forever
      (drop (call $stop_requested))
      (br $forever))))
