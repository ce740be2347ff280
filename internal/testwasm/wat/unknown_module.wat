;; unknown_module: imports from a host module that does not exist ("env").
;; It compiles, and fails at instantiation.
(module
  (import "env" "whatever" (func $whatever))
  (func $start (export "_start")
    (call $whatever)))
