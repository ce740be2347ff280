;; plugin.wat: the example's own plugin, built into plugin.wasm beside it
;; (main_test.go checks that plugin.wasm is fresh when wat2wasm is on PATH):
;;
;;	wat2wasm --debug-names plugin.wat -o plugin.wasm
;;
;; It follows Stint's calling convention (docs/plugins.md): no _start;
;; alloc(len) returns a fixed input buffer at 4096 (up to 32 KiB, else 0);
;; outputs are (ptr << 32 | len). It imports env.kv_get (the host's
;; function, see main.go), stint_plugin.config_get and stint.stop_requested.
;;   kv (ptr, len) -> i64      env.kv_get of the input as a key: the value (up to 16 KiB), or "missing"
;;   config (ptr, len) -> i64  stint_plugin.config_get of the input as a key: the value, or "denied"
;;   stop_aware () -> i64      loops until stint.stop_requested returns 1, then returns "stopped"
;;   spin () -> i64            loops forever without a call: only a forced stop (a timeout) ends it
(module
  ;; kv_get(key_ptr, key_len, buf_ptr, buf_len) -> value length, or -1
  (import "env" "kv_get" (func $kv_get (param i32 i32 i32 i32) (result i32)))
  (import "stint_plugin" "config_get" (func $config_get (param i32 i32 i32 i32) (result i32)))
  (import "stint" "stop_requested" (func $stop_requested (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 100) "missing")
  (data (i32.const 120) "denied")
  (data (i32.const 140) "stopped")
  (func (export "alloc") (param $len i32) (result i32)
    (if (result i32) (i32.gt_u (local.get $len) (i32.const 32768))
      (then (i32.const 0))
      (else (i32.const 4096))))
  (func $out (param $ptr i32) (param $len i32) (result i64)
    (i64.or (i64.shl (i64.extend_i32_u (local.get $ptr)) (i64.const 32)) (i64.extend_i32_u (local.get $len))))
  (func (export "kv") (param $ptr i32) (param $len i32) (result i64)
    (local $n i32)
    (local.set $n (call $kv_get (local.get $ptr) (local.get $len) (i32.const 40960) (i32.const 16384)))
    (if (result i64) (i32.or (i32.lt_s (local.get $n) (i32.const 0)) (i32.gt_s (local.get $n) (i32.const 16384)))
      (then (call $out (i32.const 100) (i32.const 7)))
      (else (call $out (i32.const 40960) (local.get $n)))))
  (func (export "config") (param $ptr i32) (param $len i32) (result i64)
    (local $n i32)
    (local.set $n (call $config_get (local.get $ptr) (local.get $len) (i32.const 40960) (i32.const 16384)))
    (if (result i64) (i32.or (i32.lt_s (local.get $n) (i32.const 0)) (i32.gt_s (local.get $n) (i32.const 16384)))
      (then (call $out (i32.const 120) (i32.const 6)))
      (else (call $out (i32.const 40960) (local.get $n)))))
  (func (export "stop_aware") (result i64)
    (loop $wait
      (br_if $wait (i32.eqz (call $stop_requested))))
    (call $out (i32.const 140) (i32.const 7)))
  (func (export "spin") (result i64)
    (loop $forever
      (br $forever))
    (i64.const 0)))
