;; plugin_basic: a plugin (no _start) under Stint's calling convention
;; (docs/plugins.md), importing nothing. alloc(len) returns a fixed input
;; buffer at 4096 (up to 32 KiB, else 0); outputs are (ptr << 32 | len).
;;   noop ()                 returns at once
;;   upper (ptr, len) -> i64 upper-cases the input in place and returns it
;;   count () -> i64         counts its calls in a global (warm state) and returns the count in decimal
;;   spin ()                 loops forever
;;   trap ()                 unreachable
;;   badout () -> i64        returns an output pointer far outside its memory
;;   big () -> i64           returns 65536 bytes at 0 (its whole first page)
;;   grow ()                 memory.grow 16 pages at a time until it fails, then unreachable
(module
  (memory (export "memory") 1)
  (global $count (mut i32) (i32.const 0))
  (func (export "alloc") (param $len i32) (result i32)
    (if (result i32) (i32.gt_u (local.get $len) (i32.const 32768))
      (then (i32.const 0))
      (else (i32.const 4096))))
  (func (export "noop"))
  (func (export "upper") (param $ptr i32) (param $len i32) (result i64)
    (local $i i32) (local $c i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (local.set $c (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
        (if (i32.and (i32.ge_u (local.get $c) (i32.const 97)) (i32.le_u (local.get $c) (i32.const 122)))
          (then (i32.store8 (i32.add (local.get $ptr) (local.get $i)) (i32.sub (local.get $c) (i32.const 32)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i64.or (i64.shl (i64.extend_i32_u (local.get $ptr)) (i64.const 32)) (i64.extend_i32_u (local.get $len))))
  ;; count writes the decimal digits backwards, ending at 40000.
  (func (export "count") (result i64)
    (local $n i32) (local $p i32)
    (global.set $count (i32.add (global.get $count) (i32.const 1)))
    (local.set $n (global.get $count))
    (local.set $p (i32.const 40000))
    (loop $digit
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p) (i32.add (i32.const 48) (i32.rem_u (local.get $n) (i32.const 10))))
      (local.set $n (i32.div_u (local.get $n) (i32.const 10)))
      (br_if $digit (local.get $n)))
    (i64.or (i64.shl (i64.extend_i32_u (local.get $p)) (i64.const 32))
            (i64.extend_i32_u (i32.sub (i32.const 40000) (local.get $p)))))
  (func (export "spin")
    (loop $forever (br $forever)))
  (func (export "trap")
    unreachable)
  (func (export "badout") (result i64)
    (i64.const 0x7fff000000000010))
  (func (export "big") (result i64)
    (i64.const 65536))
  (func (export "grow")
    (loop $more
      (br_if $more (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
    unreachable))
