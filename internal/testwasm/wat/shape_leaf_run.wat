;; shape_leaf_run: one body of 2,000 calls to a leaf of 640 dependent
;; loads. Rewrite version 21 charged such a body once at its entry and tested
;; it once: the red team's 100,000 calls (a leaf of loads that miss the cache)
;; ran 21 s past a 1 s deadline. Now it is split: a test after every call.
;; It writes "shape_leaf_run\n" to stderr first, then never ends on its own: only a
;; forced stop ends it (issue 37: the red team's shapes past rewrite version 21).
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "shape_leaf_run\n")
  ;; hello writes the fixture's name to stderr: the guest is running.
  (func $hello
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 15))
    (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8))))
  ;; leaf follows a chain of loads from its argument (address 64 holds 64: a
  ;; loop of one in this fixture; the red team's went through 32 MiB).
  (func $leaf (param $p i32) (result i32)
    local.get $p
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load
    i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load i32.load)
  (func $run (param $p i32) (result i32)
    local.get $p
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf
    call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf call $leaf)
  (func (export "_start")
    (call $hello)
    (i32.store (i32.const 64) (i32.const 64))
    (loop $forever
      (drop (call $run (i32.const 64)))
      (br $forever))))
