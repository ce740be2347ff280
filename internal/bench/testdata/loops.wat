;; loops: three shapes of the same computation, sum of i for 0 <= i < n, to
;; measure what close-on-context-done costs (wazero then calls a check at
;; every loop back-edge). Each export takes n and returns the sum (so the
;; loop has an effect); _start does nothing.
;;
;;   sum       tight loop: one add per back-edge, no calls
;;   sum_call  call-heavy: each iteration calls the small wasm function $add
;;   sum_x8    unrolled: eight adds per back-edge (n is rounded down to a multiple of 8)
;;   sum_host  host-call-heavy: each iteration also calls the host function bench.nop
;;             (what a guest polling stint.stop_requested does)
(module
  (import "bench" "nop" (func $nop))
  (func $add (param $a i64) (param $b i64) (result i64)
    (i64.add (local.get $a) (local.get $b)))

  (func (export "sum") (param $n i64) (result i64)
    (local $i i64) (local $acc i64)
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (local.set $acc (i64.add (local.get $acc) (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next)))
    (local.get $acc))

  (func (export "sum_call") (param $n i64) (result i64)
    (local $i i64) (local $acc i64)
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (local.set $acc (call $add (local.get $acc) (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next)))
    (local.get $acc))

  (func (export "sum_x8") (param $n i64) (result i64)
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

  (func (export "sum_host") (param $n i64) (result i64)
    (local $i i64) (local $acc i64)
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (call $nop)
        (local.set $acc (i64.add (local.get $acc) (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next)))
    (local.get $acc))

  (func (export "_start")))
