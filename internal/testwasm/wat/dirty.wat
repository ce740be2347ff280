;; dirty: checks that its memory starts zeroed, then dirties all of it.
;; Grows its memory from 1 to 16 pages, exits 1 if any of a few probed bytes
;; (in the first page, the middle and the last page) is not zero, fills all
;; 16 pages with 0xff and exits 0. Run many times on one runtime, it shows
;; that reused linear-memory buffers are zeroed before a new task gets them.
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (func $start (export "_start")
    (drop (memory.grow (i32.const 15)))
    (if (i32.or
          (i32.or (i32.load8_u (i32.const 100)) (i32.load8_u (i32.const 524288)))
          (i32.load8_u (i32.const 1048000)))
      (then (call $proc_exit (i32.const 1))))
    (memory.fill (i32.const 0) (i32.const 255) (i32.const 1048576))
    (call $proc_exit (i32.const 0))))
