;; plugin_block: a plugin (no _start) whose export block (ptr, len) calls
;; stint_test.block with its input as the host path
;; (internal/testwasm/blockhost): a host call that no forced stop ends, as
;; an embedder's host function that ignores its context would, until the
;; test writes to that named pipe; then it returns, with no output.
;; alloc(len) returns a fixed buffer at 1024 (up to 4 KiB, else 0).
(module
  (import "stint_test" "block" (func $block (param i32 i32)))
  (memory (export "memory") 1)
  (func (export "alloc") (param $len i32) (result i32)
    (if (result i32) (i32.gt_u (local.get $len) (i32.const 4096))
      (then (i32.const 0))
      (else (i32.const 1024))))
  (func (export "block") (param $ptr i32) (param $len i32)
    (call $block (local.get $ptr) (local.get $len))))
