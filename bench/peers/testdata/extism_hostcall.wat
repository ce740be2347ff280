;; extism_hostcall: hostcall.wat for Extism, whose host functions are
;; imported from extism:host/user and whose exports return an i32 status.
(module
  (import "extism:host/user" "noop" (func $noop))
  (memory (export "memory") 1)
  (func (export "calls") (result i32)
    (local $i i32)
    (loop $next
      (call $noop)
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $next (i32.lt_u (local.get $i) (i32.const 1000))))
    (i32.const 0))
  (func (export "none") (result i32)
    (local $i i32)
    (loop $next
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $next (i32.lt_u (local.get $i) (i32.const 1000))))
    (i32.const 0)))
