;; exit3: exits with code 3.
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (func $start (export "_start")
    (call $proc_exit (i32.const 3))))
