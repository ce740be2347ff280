;; shape_random: a loop whose every pass asks WASI's random_get for 32 MiB:
;; one host call, a third of a second of crypto/rand. The runner reads it in
;; chunks and ends the guest between two once its attempt is over; in one
;; read, a loop of 64 MiB calls outlived a 1 s attempt timeout by 0.8 s.
;; It writes "shape_random\n" to stderr first, then never ends on its own: only a
;; forced stop ends it (issue 9: every shape must end in both interrupt modes).
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "shape_random\n")
  ;; hello writes the fixture's name to stderr: the guest is running.
  (func $hello
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 13))
    (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func (export "_start")
    (drop (memory.grow (i32.const 511))) ;; to 32 MiB, once running
    (call $hello)
    (loop $l
      (drop (call $random_get (i32.const 0) (i32.const 33554432)))
      (br $l))))
