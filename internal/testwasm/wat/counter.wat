;; counter: 24 rounds of 4M steps of a 64-bit LCG; after each round writes
;; "round\n" to stderr and the state as 16 hex digits and "\n" to stdout;
;; exits 0. Knows nothing of Stint: the snapshot tests suspend it mid-round.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  ;; iovec at 0; written at 8; "round\n" at 16; the hex line at 32.
  (data (i32.const 16) "round\n")
  (func $write (param $fd i32) (param $at i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $at))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func $hex (param $v i64) (local $i i32) (local $d i32)
    (loop $digits
      (local.set $d (i32.wrap_i64 (i64.and (i64.shr_u (local.get $v) (i64.extend_i32_u (i32.sub (i32.const 60) (i32.shl (local.get $i) (i32.const 2))))) (i64.const 15))))
      (i32.store8 (i32.add (i32.const 32) (local.get $i))
        (i32.add (local.get $d) (select (i32.const 48) (i32.const 87) (i32.lt_u (local.get $d) (i32.const 10)))))
      (br_if $digits (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 16))))
    (i32.store8 (i32.const 48) (i32.const 10))
    (call $write (i32.const 1) (i32.const 32) (i32.const 17)))
  (func $round (param $s i64) (result i64) (local $n i32)
    (loop $step
      (local.set $s (i64.add (i64.mul (local.get $s) (i64.const 6364136223846793005)) (i64.const 1442695040888963407)))
      (br_if $step (i32.lt_u (local.tee $n (i32.add (local.get $n) (i32.const 1))) (i32.const 4000000))))
    (local.get $s))
  (func (export "_start") (local $r i32) (local $s i64)
    (local.set $s (i64.const 42))
    (loop $rounds
      (local.set $s (call $round (local.get $s)))
      (call $write (i32.const 2) (i32.const 16) (i32.const 6))
      (call $hex (local.get $s))
      (br_if $rounds (i32.lt_u (local.tee $r (i32.add (local.get $r) (i32.const 1))) (i32.const 24))))))
