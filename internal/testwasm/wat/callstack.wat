;; callstack: recursion for the call-stack limit (sandbox module limit
;; max_call_stack). Its exports follow the plugin calling convention (no
;; input, no output), so Spec.Export and plugins can call each of them.
;;   _start, deep  $sum(1000) recursively (1001 frames of $sum: 64 + 16 per
;;                 parameter and operand stack value + half its 20 bytes of
;;                 code, 138 bytes each, and the caller's 103: 138,241 bytes
;;                 counted);
;;                 unreachable if the sum is not 500500
;;   direct        $down calls itself without end
;;   mutual        $ping calls $pong calls $ping without end
;;   indirect      $via calls itself through call_indirect without end
;;   armdeep       $armsum(1000): the same sum with every call in one arm of
;;                 an if (the calling arm: its checks are in that arm, so
;;                 $armsum(0) takes no frame); unreachable if not 500500
;;   arm           $armdown calls itself from an if's arm without end
(module
  (type $void (func))
  (table 1 funcref)
  (elem (i32.const 0) $via)
  (func $sum (param $n i32) (result i32)
    (if (i32.eqz (local.get $n)) (then (return (i32.const 0))))
    (i32.add (local.get $n) (call $sum (i32.sub (local.get $n) (i32.const 1)))))
  (func $deep
    (if (i32.ne (call $sum (i32.const 1000)) (i32.const 500500)) (then unreachable)))
  (func $down (call $down))
  (func $ping (call $pong))
  (func $pong (call $ping))
  (func $via (call_indirect (type $void) (i32.const 0)))
  (func $armsum (param $n i32) (result i32)
    (if (result i32) (i32.eqz (local.get $n))
      (then (i32.const 0))
      (else (i32.add (local.get $n) (call $armsum (i32.sub (local.get $n) (i32.const 1)))))))
  (func $armdeep
    (if (i32.ne (call $armsum (i32.const 1000)) (i32.const 500500)) (then unreachable)))
  (func $armdown (param $n i32) (result i32)
    (if (result i32) (i32.eqz (local.get $n))
      (then (i32.const 0))
      (else (call $armdown (local.get $n)))))
  (func $arm (drop (call $armdown (i32.const 1))))
  (export "_start" (func $deep))
  (export "armdeep" (func $armdeep))
  (export "arm" (func $arm))
  (export "deep" (func $deep))
  (export "direct" (func $down))
  (export "mutual" (func $ping))
  (export "indirect" (func $via)))
