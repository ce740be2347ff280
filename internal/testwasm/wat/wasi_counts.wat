;; wasi_counts: WASI calls with counts over what the runner lets through
;; (sandbox wasicounts.go). _start does nothing; each export makes one call:
;;   iovecs         fd_write(1, iovs, 1025 iovecs, nwritten): over 1,024
;;   iovecs_ok      fd_write(1, iovs, 1024 empty iovecs, nwritten): allowed
;;   subscriptions  poll_oneoff(in, out, 4097 subscriptions, nevents): over 4,096
;;   path           path_open(3, 0, a path of 4097 bytes, ...): over 4,096
;;   path_ok        path_open(3, 0, a path of 4096 bytes, ...): allowed (EBADF: no mount)
;; (memory is zero: empty iovecs, clock subscriptions of timeout 0)
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open" (func $open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (memory (export "memory") 16)
  (func (export "_start"))
  (func (export "iovecs")
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1025) (i32.const 65536))))
  (func (export "iovecs_ok")
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1024) (i32.const 65536))))
  (func (export "subscriptions")
    (drop (call $poll (i32.const 0) (i32.const 262144) (i32.const 4097) (i32.const 65536))))
  (func (export "path")
    (drop (call $open (i32.const 3) (i32.const 0) (i32.const 0) (i32.const 4097) (i32.const 0) (i64.const 0) (i64.const 0) (i32.const 0) (i32.const 65536))))
  (func (export "path_ok")
    (drop (call $open (i32.const 3) (i32.const 0) (i32.const 0) (i32.const 4096) (i32.const 0) (i64.const 0) (i64.const 0) (i32.const 0) (i32.const 65536)))))
