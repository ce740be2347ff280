;; bench_toploops: while loops tested at their top, as a C-like `while (i <
;; n) { ... }` reads in WAT: block (loop (br_if 1 (cond)) ... body ... (br
;; 0))), for the stop-check benchmarks (sandbox BenchmarkInterruptInterleaved
;; calls the exports with n; internal/bench LoopCost runs _start). Each
;; export takes n and returns a value depending on all the work.
;;
;;   top        one add per iteration, the test at the loop's top (n iterations)
;;   topnested  an outer loop of n/16 iterations around an inner one of 16,
;;              both tested at their top (n inner iterations)
;;
;; _start reads stdin's first byte: '0' runs top(2^22), '1' topnested(2^22),
;; each trapping if its result is wrong; anything else (or empty stdin)
;; returns at once. The first function is empty: the interleaved benchmark
;; pads it with stores to move the other functions' machine code.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func $pad)

  (func $top (export "top") (param $n i64) (result i64) (local $i i64) (local $acc i64)
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (local.set $acc (i64.add (local.get $acc) (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next)))
    (local.get $acc))

  (func $topnested (export "topnested") (param $n i64) (result i64)
    (local $i i64) (local $j i64) (local $acc i64)
    (local.set $n (i64.shr_u (local.get $n) (i64.const 4)))
    (block $done
      (loop $outer
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (local.set $j (i64.const 0))
        (block $inner_done
          (loop $inner
            (br_if $inner_done (i64.ge_u (local.get $j) (i64.const 16)))
            (local.set $acc (i64.add (local.get $acc) (i64.add (local.get $i) (local.get $j))))
            (local.set $j (i64.add (local.get $j) (i64.const 1)))
            (br $inner)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $outer)))
    (local.get $acc))

  (func (export "_start")
    ;; iovec at 0: buf 16, len 1; nread at 8
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 1))
    (if (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)) (then unreachable))
    (if (i32.eqz (i32.load (i32.const 8))) (then return))
    (if (i32.eq (i32.load8_u (i32.const 16)) (i32.const 48)) ;; '0'
      (then
        ;; the sum of i below 2^22: 2^22 (2^22 - 1) / 2
        (if (i64.ne (call $top (i64.const 4194304)) (i64.const 8796090925056)) (then unreachable))
        (return)))
    (if (i32.eq (i32.load8_u (i32.const 16)) (i32.const 49)) ;; '1'
      (then
        ;; sum over i < 2^18, j < 16 of i + j: 16 (2^18 (2^18 - 1) / 2) + 2^18 * 120
        (if (i64.ne (call $topnested (i64.const 4194304)) (i64.const 549785174016)) (then unreachable))))))
