;; shape_br_if_loop: a loop closed by br_if on a 64-bit counter (2^64 iterations), no call.
;; It writes "shape_br_if_loop\n" to stderr first, then never ends on its own: only a
;; forced stop ends it (issue 9: every shape must end in both interrupt modes).
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "shape_br_if_loop\n")
  ;; hello writes the fixture's name to stderr: the guest is running.
  (func $hello
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 17))
    (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8))))
  ;; work counts in memory, so that nothing is optimised away.
  (func $work
    (i32.store (i32.const 64) (i32.add (i32.load (i32.const 64)) (i32.const 1))))

  (func (export "_start") (local $i i64)
    (call $hello)
    (loop $l
      (local.set $i (i64.add (local.get $i) (i64.const 1)))
      (br_if $l (i64.ne (local.get $i) (i64.const 0))))))
