;; bigmem: declares a memory of at least 2048 pages (128 MiB); _start returns.
;; Over a smaller memory limit it fails to compile.
(module
  (memory (export "memory") 2048)
  (func $start (export "_start")))
