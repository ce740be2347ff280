;; nested_loops: the red team's escape of rewrite version 20 (issue 23).
;; Three functions, each a small loop, each calling the next from inside
;; its loop; the outer loop never ends. With the countdown in each frame,
;; refilled at each entry, the interrupt function was reached about once
;; per 10^11 work units; with the instance's one countdown, every
;; interruptBudget units. Entered from _start, from the export "run" (a
;; plugin's call), and, in nested_loops_start, from the start section.
(module
  (memory (export "memory") 1)
  (global $sink (mut i32) (i32.const 0))
  (func $l3
    (local $i i32)
    (local.set $i (i32.const 1000))
    (loop $a
      (global.set $sink (i32.add (global.get $sink) (local.get $i)))
      (local.set $i (i32.sub (local.get $i) (i32.const 1)))
      (br_if $a (local.get $i))))
  (func $l2
    (local $i i32)
    (local.set $i (i32.const 1000))
    (loop $a
      (call $l3)
      (local.set $i (i32.sub (local.get $i) (i32.const 1)))
      (br_if $a (local.get $i))))
  (func $l1 (export "run")
    (loop $forever
      (call $l2)
      (br $forever)))
  (func (export "_start") (call $l1)))
