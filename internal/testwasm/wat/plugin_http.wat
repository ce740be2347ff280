;; plugin_http: an Extism plugin (imports extism:host/env) that makes one
;; HTTP GET through Extism's ABI with no language runtime, to measure what
;; the host's http_request path costs with a guest that does almost
;; nothing (sandbox BenchmarkExtismHTTP, row a').
;;   get   the input is a URL. It builds the request JSON
;;         {"method":"GET","headers":{"X-Plugin":"extism-greet"},"url":"INPUT"}
;;         in its linear memory (the URL is copied as it is: no escaping),
;;         copies it to a new kernel block (store_u64, then store_u8 for the
;;         last bytes, as Extism's PDKs do), calls http_request(block, 0),
;;         frees the request block, then http_status_code and http_headers
;;         (as the Go PDK's Send does; the headers block is freed unread).
;;         Its output is the response's body block itself (nothing if the
;;         body is empty). It returns 0 on status 200, else the status; an
;;         input over 60,000 bytes returns 2 and makes no request.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "free" (func $free (param i64)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "input_load_u64" (func $input_load_u64 (param i64) (result i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "http_request" (func $http_request (param i64 i64) (result i64)))
  (import "extism:host/env" "http_status_code" (func $http_status_code (result i32)))
  (import "extism:host/env" "http_headers" (func $http_headers (result i64)))
  (memory (export "memory") 1)
  ;; The request's JSON around the URL: the prefix at 0 (61 bytes), the
  ;; suffix at 64 (2 bytes). The request is built at 1024.
  (data (i32.const 0) "{\"method\":\"GET\",\"headers\":{\"X-Plugin\":\"extism-greet\"},\"url\":\"")
  (data (i32.const 64) "\"}")

  ;; $read_input copies the input's n bytes to linear memory at dst.
  (func $read_input (param $dst i32) (param $n i64)
    (local $i i64)
    (block $done
      (loop $next
        (br_if $done (i64.gt_u (i64.add (local.get $i) (i64.const 8)) (local.get $n)))
        (i64.store (i32.add (local.get $dst) (i32.wrap_i64 (local.get $i))) (call $input_load_u64 (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 8)))
        (br $next)))
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (i32.store8 (i32.add (local.get $dst) (i32.wrap_i64 (local.get $i))) (call $input_load_u8 (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next))))

  ;; $to_block copies n bytes of linear memory at src to a new kernel block.
  (func $to_block (param $src i32) (param $n i64) (result i64)
    (local $b i64) (local $i i64)
    (local.set $b (call $alloc (local.get $n)))
    (block $done
      (loop $next
        (br_if $done (i64.gt_u (i64.add (local.get $i) (i64.const 8)) (local.get $n)))
        (call $store_u64 (i64.add (local.get $b) (local.get $i))
          (i64.load (i32.add (local.get $src) (i32.wrap_i64 (local.get $i)))))
        (local.set $i (i64.add (local.get $i) (i64.const 8)))
        (br $next)))
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (call $store_u8 (i64.add (local.get $b) (local.get $i))
          (i32.load8_u (i32.add (local.get $src) (i32.wrap_i64 (local.get $i)))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next)))
    (local.get $b))

  (func (export "get") (result i32)
    (local $n i64) (local $len i64) (local $req i64) (local $resp i64) (local $status i32) (local $h i64)
    (local.set $n (call $input_length))
    (if (i64.gt_u (local.get $n) (i64.const 60000))
      (then (return (i32.const 2))))
    (memory.copy (i32.const 1024) (i32.const 0) (i32.const 61))
    (call $read_input (i32.const 1085) (local.get $n))
    (memory.copy (i32.add (i32.const 1085) (i32.wrap_i64 (local.get $n))) (i32.const 64) (i32.const 2))
    (local.set $len (i64.add (local.get $n) (i64.const 63)))
    (local.set $req (call $to_block (i32.const 1024) (local.get $len)))
    (local.set $resp (call $http_request (local.get $req) (i64.const 0)))
    (call $free (local.get $req))
    (local.set $status (call $http_status_code))
    (local.set $h (call $http_headers))
    (if (i64.ne (local.get $h) (i64.const 0))
      (then (call $free (local.get $h))))
    (if (i64.ne (local.get $resp) (i64.const 0))
      (then (call $output_set (local.get $resp) (call $length (local.get $resp)))))
    (if (result i32) (i32.eq (local.get $status) (i32.const 200))
      (then (i32.const 0))
      (else (local.get $status))))
)
