;; memgrow: starts with 1 page and grows its memory 16 pages (1 MiB) at a time
;; until memory.grow returns -1, then exits 2 (as a Go guest out of memory).
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (func $start (export "_start")
    (loop $grow
      (br_if $grow (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
    (call $proc_exit (i32.const 2))))
