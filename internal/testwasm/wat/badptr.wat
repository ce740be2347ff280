;; badptr: calls stint.checkpoint_save with a pointer outside its 1-page memory
;; (ptr=0xFFFFFFF0, len=64). The host must fail the guest, not crash; if the
;; call returns anyway, the guest exits 0.
(module
  (import "stint" "checkpoint_save" (func $checkpoint_save (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (func $start (export "_start")
    (drop (call $checkpoint_save (i32.const 0xFFFFFFF0) (i32.const 64)))
    (call $proc_exit (i32.const 0))))
