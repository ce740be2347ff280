;; A guest for the resume transform's tests: loops, recursion, values
;; live across calls, if/else, br_table, call_indirect, multi-value, and
;; memory. It reports through env.emit; the tests suspend it at the k-th
;; env.tick, or inside the k-th env.wait (a blocking import, made again on
;; resume), and resume it in a fresh instance.
(module
  (import "env" "emit" (func $emit (param i64)))
  (import "env" "tick" (func $tick))
  (import "env" "wait" (func $wait (param i64 i32) (result i64)))
  (memory (export "memory") 1)
  (global $acc (mut i64) (i64.const 7))
  (table 2 funcref)
  (elem (i32.const 0) $sq $cube)
  (type $un (func (param i64) (result i64)))
  (func $sq (param i64) (result i64) (call $tick) (i64.mul (local.get 0) (local.get 0)))
  (func $cube (param i64) (result i64)
    (call $tick)
    (i64.mul (local.get 0) (call_indirect (type $un) (local.get 0) (i32.const 0))))
  ;; fib: recursion, a value live across the second call
  (func $fib (param i32) (result i64)
    (call $tick)
    (if (result i64) (i32.lt_u (local.get 0) (i32.const 2))
      (then (i64.extend_i32_u (local.get 0)))
      (else (i64.add (call $fib (i32.sub (local.get 0) (i32.const 1)))
                     (call $fib (i32.sub (local.get 0) (i32.const 2)))))))
  ;; two results
  (func $divmod (param i32 i32) (result i32 i32)
    (call $tick)
    (i32.div_u (local.get 0) (local.get 1)) (i32.rem_u (local.get 0) (local.get 1)))
  (func $sum (param $n i32) (result i64) (local $i i32) (local $s i64) (local $f f64)
    (loop $l
      (call $tick)
      (local.set $s (i64.add (local.get $s) (call_indirect (type $un) (i64.extend_i32_u (local.get $i)) (i32.and (local.get $i) (i32.const 1)))))
      (local.set $f (f64.add (local.get $f) (f64.const 0.5)))
      (if (i32.eqz (i32.rem_u (local.get $i) (i32.const 7)))
        (then (local.set $s (i64.add (local.get $s) (call $wait (i64.extend_i32_u (local.get $i)) (i32.const 3))))))
      (i32.store (i32.shl (local.get $i) (i32.const 2)) (local.get $i))
      (block $b (block $a (block $z
        (br_table $z $a $b (i32.rem_u (local.get $i) (i32.const 3))))
        (global.set $acc (i64.add (global.get $acc) (i64.const 1))) (br $b))
        (global.set $acc (i64.mul (global.get $acc) (i64.const 3))))
      (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
    (i64.add (local.get $s) (i64.trunc_f64_s (local.get $f))))
;; a function whose only point is its blocking call
  (func $nap (param i64) (result i64) (i64.mul (i64.const 2) (call $wait (local.get 0) (i32.const 1))))
  (func (export "run")
    (local $q i32) (local $r i32)
    (call $emit (call $sum (i32.const 40)))
    (call $emit (global.get $acc))
    (call $emit (i64.add (i64.const 1000) (call $fib (i32.const 12))))
    (call $divmod (i32.const 47) (i32.const 5))
    (local.set $r) (local.set $q)
    (call $emit (i64.extend_i32_u (i32.add (i32.mul (local.get $q) (i32.const 100)) (local.get $r))))
    (call $emit (i64.load (i32.const 16)))
    (call $emit (i64.extend_i32_u (block (result i32) (i32.const 5) (call $tick) (i32.const 2) (i32.add))))
    (call $emit (i64.add (i64.const 5) (call $nap (i64.const 9))))
    (call $emit (i64.sub (global.get $acc) (call $wait (i64.const 4) (i32.const 2)))))
)
