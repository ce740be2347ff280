;; upper: copies stdin to stdout with ASCII letters upper-cased, then exits 0.
;; Text only: an input holding a NUL byte is refused with a message on stderr
;; and exit code 1 (runner batch's example transform; docs/batch.md). Exits 1
;; too if a read or a write fails.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  ;; read iovec at 0, write iovec at 8, byte count at 16, message at 64,
  ;; buffer at 1024 (8 KiB).
  (data (i32.const 64) "upper: the input is not text (it holds a NUL byte)\n")
  (func $start (export "_start")
    (local $n i32)
    (local $i i32)
    (local $b i32)
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 8192))
    (loop $read
      (if (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 16))
        (then (call $proc_exit (i32.const 1))))
      (local.set $n (i32.load (i32.const 16)))
      (if (i32.eqz (local.get $n))
        (then (call $proc_exit (i32.const 0))))
      ;; upper-case the n bytes in place; a NUL byte fails the task
      (local.set $i (i32.const 0))
      (block $done
        (loop $each
          (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
          (local.set $b (i32.load8_u (i32.add (i32.const 1024) (local.get $i))))
          (if (i32.eqz (local.get $b))
            (then
              (i32.store (i32.const 8) (i32.const 64))
              (i32.store (i32.const 12) (i32.const 51))
              (drop (call $fd_write (i32.const 2) (i32.const 8) (i32.const 1) (i32.const 16)))
              (call $proc_exit (i32.const 1))))
          (if (i32.and (i32.ge_u (local.get $b) (i32.const 97)) (i32.le_u (local.get $b) (i32.const 122)))
            (then (i32.store8 (i32.add (i32.const 1024) (local.get $i)) (i32.sub (local.get $b) (i32.const 32)))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $each)))
      ;; write all n bytes, looping on short writes
      (i32.store (i32.const 8) (i32.const 1024))
      (i32.store (i32.const 12) (local.get $n))
      (loop $write
        (if (call $fd_write (i32.const 1) (i32.const 8) (i32.const 1) (i32.const 16))
          (then (call $proc_exit (i32.const 1))))
        (i32.store (i32.const 8) (i32.add (i32.load (i32.const 8)) (i32.load (i32.const 16))))
        (i32.store (i32.const 12) (i32.sub (i32.load (i32.const 12)) (i32.load (i32.const 16))))
        (br_if $write (i32.load (i32.const 12))))
      (br $read))))
