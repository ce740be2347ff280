;; echo2: echo (copies stdin to stdout until EOF, then exits 0; exits 1 if a read or a
;; write fails), each read into two iovecs of 4 bytes: a read that fills the first
;; goes on into the second within the same fd_read.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  ;; read iovecs at 0 and 8, byte count at 16, write iovec at 24, buffer at 1024 (8 bytes).
  (func $start (export "_start")
    (local $n i32)
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 4))
    (i32.store (i32.const 8) (i32.const 1028))
    (i32.store (i32.const 12) (i32.const 4))
    (loop $read
      (if (call $fd_read (i32.const 0) (i32.const 0) (i32.const 2) (i32.const 16))
        (then (call $proc_exit (i32.const 1))))
      (local.set $n (i32.load (i32.const 16)))
      (if (i32.eqz (local.get $n))
        (then (call $proc_exit (i32.const 0))))
      ;; write all n bytes, looping on short writes
      (i32.store (i32.const 24) (i32.const 1024))
      (i32.store (i32.const 28) (local.get $n))
      (loop $write
        (if (call $fd_write (i32.const 1) (i32.const 24) (i32.const 1) (i32.const 16))
          (then (call $proc_exit (i32.const 1))))
        (i32.store (i32.const 24) (i32.add (i32.load (i32.const 24)) (i32.load (i32.const 16))))
        (i32.store (i32.const 28) (i32.sub (i32.load (i32.const 28)) (i32.load (i32.const 16))))
        (br_if $write (i32.load (i32.const 28))))
      (br $read))))
