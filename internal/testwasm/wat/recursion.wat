;; recursion: $recurse calls itself without end (a stack overflow).
(module
  (func $recurse (param $depth i32)
    (call $recurse (i32.add (local.get $depth) (i32.const 1))))
  (func $start (export "_start")
    (call $recurse (i32.const 0))))
