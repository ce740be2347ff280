;; mount_fdhog: opens the file "f" of its first mount (fd 3) again and again
;; without closing it, up to 100000 times or until an open fails, then
;; writes to stdout two little-endian u32: how many opens succeeded and the
;; WASI errno of the one that failed (0 if none did). Every open file is a
;; host descriptor: the runner must cap them (sandbox.MaxOpenFiles).
(module
  (import "wasi_snapshot_preview1" "path_open" (func $path_open
    (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "f")
  ;; 16: the opened fd; 32..40: count, errno; 48: iovec {32, 8}; 56: nwritten.
  (func $start (export "_start")
    (local $n i32) (local $errno i32)
    (block $out
      (loop $again
        (local.set $errno (call $path_open (i32.const 3) (i32.const 0) (i32.const 0) (i32.const 1)
          (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 16)))
        (br_if $out (local.get $errno))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br_if $again (i32.lt_u (local.get $n) (i32.const 100000)))))
    (i32.store (i32.const 32) (local.get $n))
    (i32.store (i32.const 36) (local.get $errno))
    (i32.store (i32.const 48) (i32.const 32))
    (i32.store (i32.const 52) (i32.const 8))
    (drop (call $fd_write (i32.const 1) (i32.const 48) (i32.const 1) (i32.const 56)))))
