;; shape_bulk: a loop whose every pass calls a loop-free function that fills
;; 32 MiB of memory with one memory.fill and copies 16 MiB with one
;; memory.copy: a few bytes of code, milliseconds of time a pass. Charged
;; by its code alone, it outlived a 1 s attempt timeout by 29 s; the
;; rewrite charges each bulk operation its size.
;; It writes "shape_bulk\n" to stderr first, then never ends on its own: only a
;; forced stop ends it (issue 9: every shape must end in both interrupt modes).
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "shape_bulk\n")
  ;; hello writes the fixture's name to stderr: the guest is running.
  (func $hello
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 11))
    (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func $bulk
    (memory.fill (i32.const 0) (i32.const 7) (i32.const 33554432))
    (memory.copy (i32.const 0) (i32.const 16777216) (i32.const 16777216)))
  (func (export "_start")
    (drop (memory.grow (i32.const 511))) ;; to 32 MiB, once running
    (call $hello)
    (loop $l
      (call $bulk)
      (br $l))))
