;; noop: _start returns at once. No imports, no memory.
(module
  (func $start (export "_start")))
