;; abi_call: calls one stint import with arguments read from stdin, for the
;; ABI fuzz target (sandbox FuzzStintABI). Stdin holds up to four
;; little-endian u32: selector, a, b, grow. The guest first grows its memory by
;; grow&1 pages (so pointers near the end of a grown memory are covered), then
;; calls, by selector%6: checkpoint_save(a, b), checkpoint_load(a, b),
;; checkpoint_size(), progress(a, b), deadline_ms(), stop_requested(), and
;; exits 0. A bad pointer must end the guest with a trap, never hurt the host.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "stint" "checkpoint_save" (func $save (param i32 i32) (result i32)))
  (import "stint" "checkpoint_load" (func $load (param i32 i32) (result i32)))
  (import "stint" "checkpoint_size" (func $size (result i32)))
  (import "stint" "progress" (func $progress (param i64 i64)))
  (import "stint" "deadline_ms" (func $deadline (result i64)))
  (import "stint" "stop_requested" (func $stop (result i32)))
  (memory (export "memory") 1 2)
  ;; iovec at 0 {buf=64, len=16}; bytes read at 16; arguments at 64..80.
  (func $start (export "_start")
    (local $sel i32) (local $a i32) (local $b i32)
    (i32.store (i32.const 0) (i32.const 64))
    (i32.store (i32.const 4) (i32.const 16))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 16)))
    (local.set $sel (i32.rem_u (i32.load (i32.const 64)) (i32.const 6)))
    (local.set $a (i32.load (i32.const 68)))
    (local.set $b (i32.load (i32.const 72)))
    (drop (memory.grow (i32.and (i32.load (i32.const 76)) (i32.const 1))))
    (block $done
      (block $b5 (block $b4 (block $b3 (block $b2 (block $b1 (block $b0
        (br_table $b0 $b1 $b2 $b3 $b4 $b5 (local.get $sel)))
        (drop (call $save (local.get $a) (local.get $b))) (br $done))
        (drop (call $load (local.get $a) (local.get $b))) (br $done))
        (drop (call $size)) (br $done))
        (call $progress (i64.extend_i32_u (local.get $a)) (i64.extend_i32_u (local.get $b))) (br $done))
        (drop (call $deadline)) (br $done))
      (drop (call $stop)))
    (call $proc_exit (i32.const 0))))
