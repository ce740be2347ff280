;; mount_escape: tries to leave the directory mounted at fd 3 through a
;; symlink, and reports what it managed on stdout, one line per attempt:
;; "<attempt> <wasi errno>", 0 meaning it worked. argv[1] is the target of
;; the symlink "esc" it plants in the mount (e.g. ".."), argv[2] the path it
;; then attacks (e.g. "esc/secret.txt").
;;
;;   symlink  path_symlink(argv[1], "esc")
;;   read     path_open(argv[2], follow, read) and fd_read: "read 0 <bytes>"
;;   write    path_open(argv[2], follow, write) and fd_write "pwned"
;;   trunc    path_open(argv[2], follow, O_TRUNC, read right only)
;;   create   path_open("esc/created.txt", follow, O_CREAT, write)
;;   link     path_link(argv[2], "hard"), then reads "hard": "link 0 <bytes>"
;;   mkdir    path_create_directory("esc/newdir")
;;   stat     path_filestat_get(argv[2], follow)
;;
;; Exits 0, or 1 if it cannot read its arguments or write to stdout.
(module
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_get" (func $args_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_symlink" (func $path_symlink (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_link" (func $path_link (param i32 i32 i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_create_directory" (func $path_create_directory (param i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_filestat_get" (func $path_filestat_get (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_close" (func $fd_close (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  ;; iovec at 0, byte count at 8, opened fd at 12, argc at 16, argv buffer
  ;; size at 20, read iovec at 24, bytes read at 40, number text at 32,
  ;; filestat at 64, read buffer at 512
  ;; (64 bytes), constant strings from 256, argv pointers at 1024, argv
  ;; strings from 1100.
  (data (i32.const 256) "esc")                ;; 3
  (data (i32.const 264) "esc/created.txt")    ;; 15
  (data (i32.const 280) "hard")               ;; 4
  (data (i32.const 288) "esc/newdir")         ;; 10
  (data (i32.const 300) "pwned")              ;; 5
  (data (i32.const 320) "symlink")            ;; 7
  (data (i32.const 328) "read")               ;; 4
  (data (i32.const 336) "write")              ;; 5
  (data (i32.const 344) "trunc")              ;; 5
  (data (i32.const 352) "create")             ;; 6
  (data (i32.const 360) "link")               ;; 4
  (data (i32.const 368) "mkdir")              ;; 5
  (data (i32.const 376) "stat")               ;; 4
  (data (i32.const 384) " ")
  (data (i32.const 385) "\n")

  ;; write buf[0:len) to stdout, all of it
  (func $out (param $buf i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $buf))
    (i32.store (i32.const 4) (local.get $len))
    (block $done
      (loop $write
        (br_if $done (i32.eqz (i32.load (i32.const 4))))
        (if (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))
          (then (call $proc_exit (i32.const 1))))
        (i32.store (i32.const 0) (i32.add (i32.load (i32.const 0)) (i32.load (i32.const 8))))
        (i32.store (i32.const 4) (i32.sub (i32.load (i32.const 4)) (i32.load (i32.const 8))))
        (br $write))))

  ;; write "<label> <n>" (n < 1000), without the newline
  (func $report (param $label i32) (param $len i32) (param $n i32)
    (call $out (local.get $label) (local.get $len))
    (call $out (i32.const 384) (i32.const 1))
    (if (i32.ge_u (local.get $n) (i32.const 100))
      (then
        (i32.store8 (i32.const 32) (i32.add (i32.const 48) (i32.div_u (local.get $n) (i32.const 100))))
        (call $out (i32.const 32) (i32.const 1))))
    (if (i32.ge_u (local.get $n) (i32.const 10))
      (then
        (i32.store8 (i32.const 32) (i32.add (i32.const 48) (i32.rem_u (i32.div_u (local.get $n) (i32.const 10)) (i32.const 10))))
        (call $out (i32.const 32) (i32.const 1))))
    (i32.store8 (i32.const 32) (i32.add (i32.const 48) (i32.rem_u (local.get $n) (i32.const 10))))
    (call $out (i32.const 32) (i32.const 1)))

  (func $newline (call $out (i32.const 385) (i32.const 1)))

  (func $strlen (param $s i32) (result i32)
    (local $i i32)
    (block $end
      (loop $scan
        (br_if $end (i32.eqz (i32.load8_u (i32.add (local.get $s) (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $scan)))
    (local.get $i))

  ;; path_open at fd 3, following symlinks; the fd lands at 12
  (func $open (param $path i32) (param $len i32) (param $oflags i32) (param $rights i64) (result i32)
    (call $path_open (i32.const 3) (i32.const 1) (local.get $path) (local.get $len)
      (local.get $oflags) (local.get $rights) (i64.const 0) (i32.const 0) (i32.const 12)))

  ;; reads up to 64 bytes of the file at 12 and writes " <bytes>"
  (func $read_out
    (i32.store (i32.const 24) (i32.const 512))
    (i32.store (i32.const 28) (i32.const 64))
    (if (i32.eqz (call $fd_read (i32.load (i32.const 12)) (i32.const 24) (i32.const 1) (i32.const 40)))
      (then
        (call $out (i32.const 384) (i32.const 1))
        (call $out (i32.const 512) (i32.load (i32.const 40))))))

  (func $start (export "_start")
    (local $target i32) (local $target_len i32)
    (local $path i32) (local $path_len i32)
    (local $errno i32)
    (if (call $args_sizes_get (i32.const 16) (i32.const 20))
      (then (call $proc_exit (i32.const 1))))
    (if (i32.lt_u (i32.load (i32.const 16)) (i32.const 3))
      (then (call $proc_exit (i32.const 1))))
    (if (i32.gt_u (i32.load (i32.const 20)) (i32.const 60000))
      (then (call $proc_exit (i32.const 1))))
    (if (call $args_get (i32.const 1024) (i32.const 1100))
      (then (call $proc_exit (i32.const 1))))
    (local.set $target (i32.load (i32.const 1028)))
    (local.set $target_len (call $strlen (local.get $target)))
    (local.set $path (i32.load (i32.const 1032)))
    (local.set $path_len (call $strlen (local.get $path)))

    ;; symlink
    (call $report (i32.const 320) (i32.const 7)
      (call $path_symlink (local.get $target) (local.get $target_len) (i32.const 3) (i32.const 256) (i32.const 3)))
    (call $newline)

    ;; read
    (local.set $errno (call $open (local.get $path) (local.get $path_len) (i32.const 0) (i64.const 2)))
    (call $report (i32.const 328) (i32.const 4) (local.get $errno))
    (if (i32.eqz (local.get $errno))
      (then
        (call $read_out)
        (drop (call $fd_close (i32.load (i32.const 12))))))
    (call $newline)

    ;; write
    (local.set $errno (call $open (local.get $path) (local.get $path_len) (i32.const 0) (i64.const 64)))
    (if (i32.eqz (local.get $errno))
      (then
        (i32.store (i32.const 0) (i32.const 300))
        (i32.store (i32.const 4) (i32.const 5))
        (local.set $errno (call $fd_write (i32.load (i32.const 12)) (i32.const 0) (i32.const 1) (i32.const 8)))
        (drop (call $fd_close (i32.load (i32.const 12))))))
    (call $report (i32.const 336) (i32.const 5) (local.get $errno))
    (call $newline)

    ;; trunc
    (local.set $errno (call $open (local.get $path) (local.get $path_len) (i32.const 8) (i64.const 2)))
    (if (i32.eqz (local.get $errno))
      (then (drop (call $fd_close (i32.load (i32.const 12))))))
    (call $report (i32.const 344) (i32.const 5) (local.get $errno))
    (call $newline)

    ;; create
    (local.set $errno (call $open (i32.const 264) (i32.const 15) (i32.const 1) (i64.const 64)))
    (if (i32.eqz (local.get $errno))
      (then (drop (call $fd_close (i32.load (i32.const 12))))))
    (call $report (i32.const 352) (i32.const 6) (local.get $errno))
    (call $newline)

    ;; link
    (local.set $errno (call $path_link (i32.const 3) (i32.const 0) (local.get $path) (local.get $path_len)
      (i32.const 3) (i32.const 280) (i32.const 4)))
    (call $report (i32.const 360) (i32.const 4) (local.get $errno))
    (if (i32.eqz (local.get $errno))
      (then
        (if (i32.eqz (call $open (i32.const 280) (i32.const 4) (i32.const 0) (i64.const 2)))
          (then
            (call $read_out)
            (drop (call $fd_close (i32.load (i32.const 12))))))))
    (call $newline)

    ;; mkdir
    (call $report (i32.const 368) (i32.const 5)
      (call $path_create_directory (i32.const 3) (i32.const 288) (i32.const 10)))
    (call $newline)

    ;; stat
    (call $report (i32.const 376) (i32.const 4)
      (call $path_filestat_get (i32.const 3) (i32.const 1) (local.get $path) (local.get $path_len) (i32.const 64)))
    (call $newline)

    (call $proc_exit (i32.const 0))))
