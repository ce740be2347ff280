;; mount_diskhog: tries to make its first mount (fd 3) hold more and more
;; disk, in the way the first byte of its stdin says, until a call fails:
;;   'w' write 64 KiB chunks to "data" (at most 256 of them, 16 MiB)
;;   'p' pwrite 1 byte at offset 1<<40 to "sparse" (a 1 TiB sparse file)
;;   't' fd_filestat_set_size "big" to 1<<40
;;   'a' fd_allocate "alloc" from 0 to 1<<40
;;   'f' create files "n000000", "n000001", ... (O_CREAT|O_EXCL, closed)
;;   'd' create directories, 's' symlinks, the same names
;; (at most 100000 of each). It then writes to stdout a little-endian i64,
;; what it made (bytes for w, files for f/d/s, 0 or 1 for p/t/a), and a u32,
;; the WASI errno of the call that failed (0 if none did), and exits 0.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_pwrite" (func $fd_pwrite (param i32 i32 i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_close" (func $fd_close (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_filestat_set_size" (func $set_size (param i32 i64) (result i32)))
  (import "wasi_snapshot_preview1" "fd_allocate" (func $allocate (param i32 i64 i64) (result i32)))
  (import "wasi_snapshot_preview1" "path_open" (func $path_open
    (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_create_directory" (func $mkdir (param i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_symlink" (func $symlink (param i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 2)
  ;; 16: an opened fd; 32: count (i64); 40: errno; 48: iovec {32, 12};
  ;; 56: nwritten/nread; 64: the mode byte; 72: iovec {64, 1};
  ;; 80: iovec {65536, 65536} (64 KiB of zeros); 96: "n000000";
  ;; 112..: the files' names.
  (data (i32.const 96) "n000000")
  (data (i32.const 112) "sparse")
  (data (i32.const 120) "big")
  (data (i32.const 128) "alloc")
  (data (i32.const 136) "data")
  (data (i32.const 144) "x")

  ;; open creates (or opens) the file name/len in fd 3 into 16; errno.
  (func $open (param $name i32) (param $len i32) (param $oflags i32) (result i32)
    (call $path_open (i32.const 3) (i32.const 0) (local.get $name) (local.get $len)
      (local.get $oflags) (i64.const -1) (i64.const -1) (i32.const 0) (i32.const 16)))

  ;; name writes n as six decimal digits after the "n" at 96.
  (func $name (param $n i32)
    (local $i i32)
    (local.set $i (i32.const 6))
    (loop $digit
      (i32.store8 (i32.add (i32.const 96) (local.get $i))
        (i32.add (i32.const 48) (i32.rem_u (local.get $n) (i32.const 10))))
      (local.set $n (i32.div_u (local.get $n) (i32.const 10)))
      (local.set $i (i32.sub (local.get $i) (i32.const 1)))
      (br_if $digit (local.get $i))))

  (func $start (export "_start")
    (local $mode i32) (local $errno i32) (local $n i64) (local $k i32)
    (i32.store (i32.const 72) (i32.const 64))
    (i32.store (i32.const 76) (i32.const 1))
    (drop (call $fd_read (i32.const 0) (i32.const 72) (i32.const 1) (i32.const 56)))
    (local.set $mode (i32.load8_u (i32.const 64)))
    (i32.store (i32.const 80) (i32.const 65536))
    (i32.store (i32.const 84) (i32.const 65536))
    (block $done
      (if (i32.eq (local.get $mode) (i32.const 119)) ;; 'w'
        (then
          (local.set $errno (call $open (i32.const 136) (i32.const 4) (i32.const 9))) ;; CREAT|TRUNC
          (br_if $done (local.get $errno))
          (loop $more
            (local.set $errno (call $fd_write (i32.load (i32.const 16)) (i32.const 80) (i32.const 1) (i32.const 56)))
            (br_if $done (local.get $errno))
            (local.set $n (i64.add (local.get $n) (i64.extend_i32_u (i32.load (i32.const 56)))))
            (br_if $more (i64.lt_u (local.get $n) (i64.const 16777216))))
          (br $done)))
      (if (i32.eq (local.get $mode) (i32.const 112)) ;; 'p'
        (then
          (local.set $errno (call $open (i32.const 112) (i32.const 6) (i32.const 1)))
          (br_if $done (local.get $errno))
          (local.set $errno (call $fd_pwrite (i32.load (i32.const 16)) (i32.const 80) (i32.const 1)
            (i64.const 1099511627776) (i32.const 56)))
          (br_if $done (local.get $errno))
          (local.set $n (i64.const 1))
          (br $done)))
      (if (i32.eq (local.get $mode) (i32.const 116)) ;; 't'
        (then
          (local.set $errno (call $open (i32.const 120) (i32.const 3) (i32.const 1)))
          (br_if $done (local.get $errno))
          (local.set $errno (call $set_size (i32.load (i32.const 16)) (i64.const 1099511627776)))
          (br_if $done (local.get $errno))
          (local.set $n (i64.const 1))
          (br $done)))
      (if (i32.eq (local.get $mode) (i32.const 97)) ;; 'a'
        (then
          (local.set $errno (call $open (i32.const 128) (i32.const 5) (i32.const 1)))
          (br_if $done (local.get $errno))
          (local.set $errno (call $allocate (i32.load (i32.const 16)) (i64.const 0) (i64.const 1099511627776)))
          (br_if $done (local.get $errno))
          (local.set $n (i64.const 1))
          (br $done)))
      ;; 'f', 'd', 's': new names until a call fails
      (loop $more
        (call $name (local.get $k))
        (if (i32.eq (local.get $mode) (i32.const 102)) ;; 'f'
          (then
            (local.set $errno (call $open (i32.const 96) (i32.const 7) (i32.const 5))) ;; CREAT|EXCL
            (br_if $done (local.get $errno))
            (drop (call $fd_close (i32.load (i32.const 16))))))
        (if (i32.eq (local.get $mode) (i32.const 100)) ;; 'd'
          (then
            (local.set $errno (call $mkdir (i32.const 3) (i32.const 96) (i32.const 7)))
            (br_if $done (local.get $errno))))
        (if (i32.eq (local.get $mode) (i32.const 115)) ;; 's'
          (then
            (local.set $errno (call $symlink (i32.const 144) (i32.const 1) (i32.const 3) (i32.const 96) (i32.const 7)))
            (br_if $done (local.get $errno))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (local.set $n (i64.extend_i32_u (local.get $k)))
        (br_if $more (i32.lt_u (local.get $k) (i32.const 100000)))))
    (i64.store (i32.const 32) (local.get $n))
    (i32.store (i32.const 40) (local.get $errno))
    (i32.store (i32.const 48) (i32.const 32))
    (i32.store (i32.const 52) (i32.const 12))
    (drop (call $fd_write (i32.const 1) (i32.const 48) (i32.const 1) (i32.const 56)))))
