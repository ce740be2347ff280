;; hostcall: the cost of a host function call. Export `calls` (Stint's
;; plugin convention: no input, no output) calls the imported no-op host
;; function bench.noop 1,000 times; `none` runs the same loop without the
;; call. (calls - none) / 1000 is one host call's cost.
(module
  (import "bench" "noop" (func $noop))
  (memory (export "memory") 1)
  (func (export "calls")
    (local $i i32)
    (loop $next
      (call $noop)
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $next (i32.lt_u (local.get $i) (i32.const 1000)))))
  (func (export "none")
    (local $i i32)
    (loop $next
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $next (i32.lt_u (local.get $i) (i32.const 1000))))))
