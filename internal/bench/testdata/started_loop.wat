;; started_loop: saves a one-byte checkpoint (so that whoever watches the
;; store sees the guest has really started), then spins forever in a tight
;; loop. Only a forced stop ends it. Used by the shutdown benchmark.
(module
  (import "stint" "checkpoint_save" (func $checkpoint_save (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "s")
  (func $start (export "_start")
    (drop (call $checkpoint_save (i32.const 0) (i32.const 1)))
    (loop $forever
      (br $forever))))
