;; extism_upper: the plugin_basic exports (noop, upper) written against
;; Extism's kernel ABI (extism:host/env), so that Extism's Plugin.Call does
;; the same work as Stint's Plugin.Call on plugin_basic. upper copies its
;; input into its own memory 8 bytes per kernel call (input_load_u64, as
;; Extism's PDKs do; the input length must be a multiple of 8: the
;; benchmark's is 64), upper-cases it there, and copies it into an Extism
;; memory block (store_u64) that it sets as the output.
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u64" (func $input_load_u64 (param i64) (result i64)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 1)
  (func (export "noop") (result i32) (i32.const 0))
  (func (export "upper") (result i32)
    (local $n i32) (local $i i32) (local $c i32) (local $out i64)
    (local.set $n (i32.wrap_i64 (call $input_length)))
    (block $done
      (loop $load
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (i64.store (i32.add (i32.const 1024) (local.get $i)) (call $input_load_u64 (i64.extend_i32_u (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $load)))
    (local.set $i (i32.const 0))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $c (i32.load8_u (i32.add (i32.const 1024) (local.get $i))))
        (if (i32.and (i32.ge_u (local.get $c) (i32.const 97)) (i32.le_u (local.get $c) (i32.const 122)))
          (then (i32.store8 (i32.add (i32.const 1024) (local.get $i)) (i32.sub (local.get $c) (i32.const 32)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.set $out (call $alloc (i64.extend_i32_u (local.get $n))))
    (local.set $i (i32.const 0))
    (block $done
      (loop $store
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (call $store_u64 (i64.add (local.get $out) (i64.extend_i32_u (local.get $i))) (i64.load (i32.add (i32.const 1024) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $store)))
    (call $output_set (local.get $out) (i64.extend_i32_u (local.get $n)))
    (i32.const 0)))
