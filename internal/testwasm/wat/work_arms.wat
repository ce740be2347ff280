;; work_arms: a loop of 10,000 passes whose every pass goes through one of
;; two arms of a br_table: the light one (one add) or, when the first byte
;; of stdin is 'h', the heavy one (32 adds). Its work units (the sandbox's
;; work counter) charge each pass what its arm holds, not the whole loop
;; body: the heavy input counts more work than the light one.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start") (local $i i32) (local $arm i32) (local $acc i32)
    ;; read one byte to 1024: iovec at 0 {buf=1024, len=1}; count at 16.
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 1))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 16)))
    (local.set $arm (i32.eq (i32.load8_u (i32.const 1024)) (i32.const 104))) ;; 'h'
    (local.set $i (i32.const 10000))
    (block $done
      (loop $l
        (br_if $done (i32.eqz (local.get $i)))
        (local.set $i (i32.sub (local.get $i) (i32.const 1)))
        (block $heavy
          (block $light
            (br_table $light $heavy (local.get $arm)))
          (local.set $acc (i32.add (local.get $acc) (i32.const 1)))
          (br $l))
        (local.set $acc (i32.add (local.get $acc) (i32.const 1)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 2)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 3)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 4)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 5)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 6)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 7)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 8)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 9)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 10)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 11)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 12)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 13)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 14)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 15)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 16)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 17)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 18)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 19)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 20)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 21)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 22)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 23)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 24)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 25)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 26)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 27)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 28)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 29)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 30)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 31)))
        (local.set $acc (i32.add (local.get $acc) (i32.const 32)))
        (br $l)))
    (i32.store (i32.const 64) (local.get $acc))))
