;; args_env: writes its args, then its environment, to stdout: each entry
;; (args_get / environ_get, NUL-terminated) followed by "\n" instead of its
;; NUL. Exits 0, or 1 if a WASI call fails.
(module
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_get" (func $args_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $environ_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_get" (func $environ_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  ;; count at 0, buffer size at 4, iovec at 8, bytes written at 16;
  ;; the pointer array from 1024, then the strings.

  (func $check (param $errno i32)
    (if (local.get $errno) (then (call $proc_exit (i32.const 1)))))

  ;; grow memory so that [0, end) is addressable
  (func $ensure (param $end i32)
    (local $pages i32)
    (local.set $pages
      (i32.sub
        (i32.shr_u (i32.add (local.get $end) (i32.const 65535)) (i32.const 16))
        (memory.size)))
    (if (i32.gt_s (local.get $pages) (i32.const 0))
      (then
        (if (i32.eq (memory.grow (local.get $pages)) (i32.const -1))
          (then (call $proc_exit (i32.const 1)))))))

  ;; turn the NULs of buf[0:len) into newlines and write it all to stdout
  (func $write_lines (param $buf i32) (param $len i32)
    (local $i i32)
    (block $done
      (loop $scan
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (if (i32.eqz (i32.load8_u (i32.add (local.get $buf) (local.get $i))))
          (then (i32.store8 (i32.add (local.get $buf) (local.get $i)) (i32.const 10))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $scan)))
    (i32.store (i32.const 8) (local.get $buf))
    (i32.store (i32.const 12) (local.get $len))
    (block $written
      (loop $write
        (br_if $written (i32.eqz (i32.load (i32.const 12))))
        (call $check (call $fd_write (i32.const 1) (i32.const 8) (i32.const 1) (i32.const 16)))
        (i32.store (i32.const 8) (i32.add (i32.load (i32.const 8)) (i32.load (i32.const 16))))
        (i32.store (i32.const 12) (i32.sub (i32.load (i32.const 12)) (i32.load (i32.const 16))))
        (br $write))))

  (func $start (export "_start")
    (local $buf i32)
    ;; args
    (call $check (call $args_sizes_get (i32.const 0) (i32.const 4)))
    (local.set $buf (i32.add (i32.const 1024) (i32.shl (i32.load (i32.const 0)) (i32.const 2))))
    (call $ensure (i32.add (local.get $buf) (i32.load (i32.const 4))))
    (call $check (call $args_get (i32.const 1024) (local.get $buf)))
    (call $write_lines (local.get $buf) (i32.load (i32.const 4)))
    ;; environment
    (call $check (call $environ_sizes_get (i32.const 0) (i32.const 4)))
    (local.set $buf (i32.add (i32.const 1024) (i32.shl (i32.load (i32.const 0)) (i32.const 2))))
    (call $ensure (i32.add (local.get $buf) (i32.load (i32.const 4))))
    (call $check (call $environ_get (i32.const 1024) (local.get $buf)))
    (call $write_lines (local.get $buf) (i32.load (i32.const 4)))
    (call $proc_exit (i32.const 0))))
