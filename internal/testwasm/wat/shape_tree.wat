;; shape_tree: direct recursion without a loop, every call in one arm of an if (the
;; calling arm: the rewrite puts its checks in that arm, so the leaves pay for none):
;; f(n) counts a leaf at 0, else calls f(n-1) twice, from 60 (2^60 calls).
;; It writes "shape_tree\n" to stderr first, then never ends on its own: only a
;; forced stop ends it (issue 9: every shape must end in both interrupt modes).
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "shape_tree\n")
  ;; hello writes the fixture's name to stderr: the guest is running.
  (func $hello
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 11))
    (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8))))

  (func $f (param $n i32)
    (if (i32.eqz (local.get $n))
      (then
        ;; a leaf: counted in memory, so that nothing is optimised away
        (i32.store (i32.const 64) (i32.add (i32.load (i32.const 64)) (i32.const 1))))
      (else
        (call $f (i32.sub (local.get $n) (i32.const 1)))
        (call $f (i32.sub (local.get $n) (i32.const 1))))))
  (func (export "_start")
    (call $hello)
    (call $f (i32.const 60))))
