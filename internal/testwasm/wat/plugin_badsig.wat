;; plugin_badsig: a plugin that imports env.kv_get with the wrong signature
;; ((i32) -> i32 instead of (i32, i32, i32, i32) -> i32): refused at load.
(module
  (import "env" "kv_get" (func $kv_get (param i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "get") (result i64)
    (i64.extend_i32_u (call $kv_get (i32.const 0)))))
