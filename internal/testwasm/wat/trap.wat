;; trap: _start calls $crash, which executes unreachable. Built with
;; --debug-names, so the trap's stack trace names both functions.
(module
  (func $crash
    unreachable)
  (func $start (export "_start")
    (call $crash)))
