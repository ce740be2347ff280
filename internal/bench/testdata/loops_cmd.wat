;; loops_cmd: the four shapes of loops.wat as a WASI command, so that they
;; run through sandbox.Runtime.Run (and its module rewriting). stdin's first
;; byte picks the shape: '0' sum (one add per back-edge), '1' sum_call (a
;; wasm call per iteration), '2' sum_x8 (eight adds per back-edge), '3'
;; sum_host (a host call per iteration: WASI sched_yield, wazero's own no-op,
;; the same function with or without Stint). Each sums i
;; for 0 <= i < 2^22 and traps if the sum is wrong.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "sched_yield" (func $sched_yield (result i32)))
  (memory (export "memory") 1)
  (func $add (param $a i64) (param $b i64) (result i64)
    (i64.add (local.get $a) (local.get $b)))
  (func $sum (param $n i64) (result i64)
    (local $i i64) (local $acc i64)
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (local.set $acc (i64.add (local.get $acc) (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next)))
    (local.get $acc))
  (func $sum_call (param $n i64) (result i64)
    (local $i i64) (local $acc i64)
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (local.set $acc (call $add (local.get $acc) (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next)))
    (local.get $acc))
  (func $sum_x8 (param $n i64) (result i64)
    (local $i i64) (local $acc i64)
    (local.set $n (i64.and (local.get $n) (i64.const -8)))
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (local.set $acc (i64.add (local.get $acc) (local.get $i)))
        (local.set $acc (i64.add (local.get $acc) (i64.add (local.get $i) (i64.const 1))))
        (local.set $acc (i64.add (local.get $acc) (i64.add (local.get $i) (i64.const 2))))
        (local.set $acc (i64.add (local.get $acc) (i64.add (local.get $i) (i64.const 3))))
        (local.set $acc (i64.add (local.get $acc) (i64.add (local.get $i) (i64.const 4))))
        (local.set $acc (i64.add (local.get $acc) (i64.add (local.get $i) (i64.const 5))))
        (local.set $acc (i64.add (local.get $acc) (i64.add (local.get $i) (i64.const 6))))
        (local.set $acc (i64.add (local.get $acc) (i64.add (local.get $i) (i64.const 7))))
        (local.set $i (i64.add (local.get $i) (i64.const 8)))
        (br $next)))
    (local.get $acc))
  (func $sum_host (param $n i64) (result i64)
    (local $i i64) (local $acc i64)
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (drop (call $sched_yield))
        (local.set $acc (i64.add (local.get $acc) (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next)))
    (local.get $acc))
  (func (export "_start")
    (local $acc i64)
    ;; iovec at 0: buf 16, len 1; nread at 8
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 1))
    (if (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)) (then unreachable))
    (block $check
      (block $host
        (block $x8
          (block $call
            (block $plain
              (br_table $plain $call $x8 $host
                (i32.sub (i32.load8_u (i32.const 16)) (i32.const 48))))
            (local.set $acc (call $sum (i64.const 4194304)))
            (br $check))
          (local.set $acc (call $sum_call (i64.const 4194304)))
          (br $check))
        (local.set $acc (call $sum_x8 (i64.const 4194304)))
        (br $check))
      (local.set $acc (call $sum_host (i64.const 4194304))))
    ;; sum below 2^22 = 2^22 (2^22 - 1) / 2
    (if (i64.ne (local.get $acc) (i64.const 8796090925056)) (then unreachable))))
