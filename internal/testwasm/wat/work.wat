;; work: reads up to 4 KiB of stdin, then for each byte b calls $spin, a
;; leaf function whose loop runs b*64 passes, and returns from _start
;; (no proc_exit) after writing "done\n". Its work units (the sandbox's
;; work counter) are the same for the same input, and grow by the same
;; amount for each byte more of the same value.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 32) "done\n")
  (global $sink (mut i32) (i32.const 0))
  (func $spin (param $b i32) (result i32)
    (local $n i32) (local $acc i32)
    (local.set $n (i32.mul (local.get $b) (i32.const 64)))
    (if (i32.eqz (local.get $n)) (then (return (i32.const 0))))
    (loop $l
      (local.set $acc (i32.add (local.get $acc) (local.get $n)))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br_if $l (local.get $n)))
    (local.get $acc))
  (func $start (export "_start")
    (local $len i32) (local $i i32)
    ;; read iovec at 0 {buf=1024, len=4096}; count at 16.
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 4096))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 16)))
    (local.set $len (i32.load (i32.const 16)))
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (global.set $sink (i32.add (global.get $sink)
          (call $spin (i32.load8_u (i32.add (i32.const 1024) (local.get $i))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $each)))
    ;; write iovec at 8 {buf=32, len=5}; count at 16.
    (i32.store (i32.const 8) (i32.const 32))
    (i32.store (i32.const 12) (i32.const 5))
    (drop (call $fd_write (i32.const 1) (i32.const 8) (i32.const 1) (i32.const 16)))))
