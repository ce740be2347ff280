;; extism_upper: the plugin_basic exports (noop, upper) written against
;; Extism's kernel ABI (extism:host/env), so that Extism's Plugin.Call does
;; the same work as Stint's Plugin.Call on plugin_basic: upper reads its
;; input byte by byte, upper-cases it into an Extism memory block and sets
;; it as the output.
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 1)
  (func (export "noop") (result i32) (i32.const 0))
  (func (export "upper") (result i32)
    (local $n i64) (local $i i64) (local $c i32) (local $out i64)
    (local.set $n (call $input_length))
    (local.set $out (call $alloc (local.get $n)))
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (local.set $c (call $input_load_u8 (local.get $i)))
        (if (i32.and (i32.ge_u (local.get $c) (i32.const 97)) (i32.le_u (local.get $c) (i32.const 122)))
          (then (local.set $c (i32.sub (local.get $c) (i32.const 32)))))
        (call $store_u8 (i64.add (local.get $out) (local.get $i)) (local.get $c))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next)))
    (call $output_set (local.get $out) (local.get $n))
    (i32.const 0)))
