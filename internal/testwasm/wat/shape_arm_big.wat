;; shape_arm_big: a loop whose first act calls $big, a function of more
;; than 2 KiB of code whose only call sits in the arm of an if that is not
;; taken. Rewrite version 21 took every function over 2 KiB to test the
;; countdown at its entry, so the loop dropped its own test; but the calling
;; arm had moved $big's test into that arm: no test ever ran, and the guest
;; was never stopped.
;; It writes "shape_arm_big\n" to stderr first, then never ends on its own: only a
;; forced stop ends it (issue 37: the red team's shapes past rewrite version 21).
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "shape_arm_big\n")
  ;; hello writes the fixture's name to stderr: the guest is running.
  (func $hello
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 14))
    (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func $big (param $n i32)
    (if (local.get $n) (then (call $big (i32.const 0))))
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop
    nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop nop)
  (func (export "_start")
    (call $hello)
    (loop $forever
      (call $big (i32.const 0))
      (br $forever)))
  ;; call: the same loop as an export, for runner call.
  (func (export "spin")
    (loop $forever
      (call $big (i32.const 0))
      (br $forever))))
