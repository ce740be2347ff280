;; bulk_ops: every bulk memory and table operation the rewrite charges by
;; size (memory.init, memory.copy, memory.fill, table.init, table.copy,
;; table.grow, table.fill), in a loop and in loop-free functions, for the
;; rewrite's equivalence tests (sandbox TestBulkChargeEquivalent). run(n)
;; does n passes, and returns a checksum of memory and the table's size;
;; an n past the memory's end traps out of bounds. big(x) grows memory to
;; 8 MiB, fills it with a pattern of x, then does a fill and two
;; overlapping copies of megabytes (the rewrite does them in 1 MiB pieces:
;; one copy forward, one from the end), and, for x = 7, a copy past the
;; memory's end (a trap, before it writes anything).
(module
  (memory (export "memory") 1)
  (table $t 4 funcref)
  (data $d "0123456789abcdef")
  (elem $e func $f $g)
  (func (export "_start"))
  (func $f (result i32) (i32.const 1))
  (func $g (result i32) (i32.const 2))
  (func $once (param $n i32)
    (memory.fill (i32.const 256) (local.get $n) (i32.const 64))
    (memory.init $d (i32.const 512) (i32.const 0) (i32.const 16))
    (drop (table.grow $t (ref.null func) (i32.const 1))))
  (func (export "run") (param $n i32) (result i32) (local $i i32) (local $sum i32)
    (loop $l
      (if (i32.lt_u (local.get $i) (local.get $n))
        (then
          (memory.fill (local.get $i) (i32.const 9) (i32.const 100))
          (memory.copy (i32.add (local.get $i) (i32.const 1000)) (local.get $i) (i32.const 50))
          (table.init $t $e (i32.const 0) (i32.const 0) (i32.const 2))
          (table.copy $t $t (i32.const 2) (i32.const 0) (i32.const 2))
          (table.fill $t (i32.const 1) (ref.null func) (i32.const 1))
          (call $once (local.get $i))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $l))))
    (local.set $i (i32.const 0))
    (loop $s
      (local.set $sum (i32.add (local.get $sum) (i32.load8_u (local.get $i))))
      (br_if $s (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 4096))))
    (i32.add (i32.mul (local.get $sum) (i32.const 1000)) (table.size $t)))
  (func (export "big") (param $x i32) (result i32) (local $i i32)
    (drop (memory.grow (i32.const 127)))
    (loop $p
      (i32.store (local.get $i) (i32.mul (local.get $i) (local.get $x)))
      (br_if $p (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 4))) (i32.const 8388608))))
    (memory.fill (i32.const 3) (local.get $x) (i32.const 2621540))
    (memory.copy (i32.const 1000) (i32.const 1500000) (i32.const 3000017))
    (memory.copy (i32.const 2000000) (i32.const 1999000) (i32.const 3500001))
    (if (i32.eq (local.get $x) (i32.const 7))
      (then (memory.copy (i32.const 8000000) (i32.const 0) (i32.const 1048577))))
    (i32.add (i32.load (i32.const 2500000)) (i32.load (i32.const 5000000)))))
