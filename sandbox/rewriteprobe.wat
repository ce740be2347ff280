;; The rewrite probe: a small module that goes through everything
;; prepareModule rewrites (calls, a recursive function, call_indirect
;; through a table and its element segment, a loop, a global, exports, a
;; start-less command) and a memory image (data segments). Its prepared
;; form is hashed into every prepared-module cache key (preparedcache.go),
;; so a change to what the rewrite or the image produce changes the keys
;; even if rewriteVersion was not bumped. It is never run.
;;
;; Rebuild: wat2wasm --debug-names rewriteprobe.wat -o rewriteprobe.wasm
;; (TestRewriteProbeUpToDate checks it).
(module
  (type $t (func (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory 2)
  (global $g (mut i32) (i32.const 7))
  (table 4 funcref)
  (elem (i32.const 0) $f $id)
  (func $f (type $t) (param $n i32) (result i32)
    (local $i i32)
    (loop $l
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (if (i32.gt_u (local.get $n) (i32.const 1))
      (then (drop (call $f (i32.sub (local.get $n) (i32.const 1))))))
    (call_indirect (type $t) (local.get $n) (i32.const 1)))
  (func $id (type $t) (param i32) (result i32) (local.get 0))
  (func (export "_start")
    (global.set $g (call $f (i32.const 3)))
    (call $exit (i32.const 0)))
  (data (i32.const 16) "stint rewrite probe")
  (data (i32.const 96) "\01\02\03\04"))
