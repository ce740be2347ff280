;; shape_bench: the compute shapes of issue 9, for the interrupt benchmarks
;; (sandbox BenchmarkInterrupt): no stop mechanism, wazero mode and checks
;; mode side by side. Each export takes n and returns a value depending on
;; all the work, so nothing is optimised away. _start does nothing.
;;
;;   loop     one add per iteration (n iterations)
;;   nested   an outer loop around an inner loop of 16 iterations (n inner iterations)
;;   brtable  a four-state machine, one br_table per iteration (n iterations)
;;   tree     call-heavy recursion without a loop: tree(d) calls tree(d-1) twice (2^(d+1)-1 calls)
(module
  (memory (export "memory") 1)
  (func (export "_start"))

  (func (export "loop") (param $n i64) (result i64) (local $acc i64)
    (if (i64.eqz (local.get $n)) (then (return (i64.const 0))))
    (loop $l
      (local.set $acc (i64.add (local.get $acc) (local.get $n)))
      (br_if $l (i64.ne (local.tee $n (i64.sub (local.get $n) (i64.const 1))) (i64.const 0))))
    (local.get $acc))

  (func (export "nested") (param $n i64) (result i64) (local $acc i64) (local $j i64)
    (local.set $n (i64.shr_u (local.get $n) (i64.const 4)))
    (block $done
      (loop $outer
        (br_if $done (i64.eqz (local.get $n)))
        (local.set $j (i64.const 16))
        (loop $inner
          (local.set $acc (i64.add (local.get $acc) (local.get $j)))
          (br_if $inner (i64.ne (local.tee $j (i64.sub (local.get $j) (i64.const 1))) (i64.const 0))))
        (local.set $n (i64.sub (local.get $n) (i64.const 1)))
        (br $outer)))
    (local.get $acc))

  (func (export "brtable") (param $n i64) (result i64) (local $acc i64) (local $s i32)
    (block $done
      (loop $l
        (br_if $done (i64.eqz (local.get $n)))
        (local.set $n (i64.sub (local.get $n) (i64.const 1)))
        (block $s3
          (block $s2
            (block $s1
              (block $s0
                (br_table $s0 $s1 $s2 $s3 (local.get $s)))
              (local.set $acc (i64.add (local.get $acc) (i64.const 1)))
              (local.set $s (i32.const 1))
              (br $l))
            (local.set $acc (i64.add (local.get $acc) (i64.const 2)))
            (local.set $s (i32.const 2))
            (br $l))
          (local.set $acc (i64.add (local.get $acc) (i64.const 3)))
          (local.set $s (i32.const 3))
          (br $l))
        (local.set $acc (i64.xor (local.get $acc) (i64.const 5)))
        (local.set $s (i32.const 0))
        (br $l)))
    (local.get $acc))

  (func $tree (export "tree") (param $d i64) (result i64)
    (if (result i64) (i64.eqz (local.get $d))
      (then (i64.const 1))
      (else
        (i64.add
          (call $tree (i64.sub (local.get $d) (i64.const 1)))
          (call $tree (i64.sub (local.get $d) (i64.const 1))))))))
