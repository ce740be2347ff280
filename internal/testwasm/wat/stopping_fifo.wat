;; stopping_fifo: says "opening fifo" on stderr and reports progress 1 of 1
;; (signals for tests), opens "fifo" in its first mount (preopen fd 3) and
;; reads it until EOF, then exits 0 (1 if the open or a read fails). On a named
;; pipe nobody writes, the open and the read block in the host, where no
;; context reaches: a guest no forced stop can end. No loop header comes
;; between the signals and the open, so a forced stop after them cannot end
;; the guest before it blocks.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "stint" "progress" (func $progress (param i64 i64)))
  (memory (export "memory") 1)
  ;; 0: read iovec {buf=1024, len=4096}; 16: bytes read; 20: opened fd;
  ;; 32: "fifo"; 48: the message; 64: its iovec; 72: bytes written.
  ;; The open asks for fd_read only (rights 2): the mount may be read-only.
  (data (i32.const 32) "fifo")
  (data (i32.const 48) "opening fifo\n")
  (func $start (export "_start")
    (i32.store (i32.const 64) (i32.const 48))
    (i32.store (i32.const 68) (i32.const 13))
    (drop (call $fd_write (i32.const 2) (i32.const 64) (i32.const 1) (i32.const 72)))
    (call $progress (i64.const 1) (i64.const 1))
    (if (call $path_open (i32.const 3) (i32.const 0) (i32.const 32) (i32.const 4)
          (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 20))
      (then (call $proc_exit (i32.const 1))))
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 4096))
    (loop $read
      (if (call $fd_read (i32.load (i32.const 20)) (i32.const 0) (i32.const 1) (i32.const 16))
        (then (call $proc_exit (i32.const 1))))
      (br_if $read (i32.load (i32.const 16))))
    (call $proc_exit (i32.const 0))))
