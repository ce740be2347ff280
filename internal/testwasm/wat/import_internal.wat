;; import_internal: imports Stint's own host module "stint:sandbox", which
;; the rewrite adds for its stop checks, and calls its interrupt function
;; with a made-up count (which made its work units negative, past any work
;; budget). Refused at compile as bad_import.
(module
  (import "stint:sandbox" "interrupt" (func $interrupt (param i32)))
  (func $start (export "_start")
    (loop $forever
      (call $interrupt (i32.const 2147483647))
      (br $forever))))
