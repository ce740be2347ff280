;; unknown_import: imports a function the stint host module does not have.
;; It compiles, and fails at instantiation.
(module
  (import "stint" "no_such_function" (func $no_such_function))
  (func $start (export "_start")
    (call $no_such_function)))
