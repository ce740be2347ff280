;; nested_loops_start: nested_loops, entered from the start section.
(module (start $l1)
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
