// Package wat holds tiny WebAssembly fixtures for tests: each name.wat is
// committed beside the name.wasm that wat2wasm builds from it (run build.sh
// after editing one; fixtures_test.go fails when a .wasm is stale). The .wasm
// files are embedded: tests of other packages get them through [Load] or
// [MustLoad].
//
// Every fixture but the plugins (plugin_*) is a WASI preview 1 command that
// exports "_start" (and its memory as "memory" when it has one):
//
//	noop                  _start returns at once (no imports)
//	exit3                 proc_exit(3)
//	loop                  writes "loop\n" to stderr, then an infinite tight loop, no calls
//	trap                  unreachable in function $crash, called from _start
//	recursion             infinite recursion (the call-stack limit; wazero alone: stack overflow)
//	callstack             _start and deep recurse 1001 frames deep (138,241 bytes counted); exports direct, mutual and indirect recurse without end
//	memgrow               memory.grow 16 pages at a time until -1, then proc_exit(2)
//	bigmem                declares a 2048-page (128 MiB) memory minimum; _start returns
//	sleep                 writes "sleep\n" to stderr; poll_oneoff: one relative monotonic clock of one hour; proc_exit(0)
//	poll_noclock          poll_oneoff: one fd_read subscription on fd 0, no clock, then proc_exit(0)
//	stdin                 fd_read of fd 0 until EOF, then proc_exit(0)
//	echo                  copies stdin to stdout until EOF, then proc_exit(0)
//	echo2                 echo, each read into two iovecs of 4 bytes
//	args_env              writes each arg, then each env entry, to stdout, one a line
//	flood, flood_stderr   fd_write of 4 KiB to fd 1 (2) forever
//	unknown_import        imports and calls stint.no_such_function (fails at instantiation)
//	unknown_module        imports and calls env.whatever (fails at instantiation)
//	import_internal       imports Stint's own stint:sandbox.interrupt (refused: bad_import)
//	badptr                stint.checkpoint_save(0xFFFFFFF0, 64) out of its 1-page memory, then proc_exit(0)
//	badptr_load           stint.checkpoint_load(0xFFFFFFF0, 64) out of its 1-page memory, then proc_exit(0)
//	stop_aware            loops until stint.stop_requested returns 1, then proc_exit(75)
//	stop_ignore           writes "stop_ignore\n" to stderr, then calls stint.stop_requested forever, ignoring it
//	checkpoint            writes the starting checkpoint (if any) to stdout, saves "saved"; proc_exit(3) if the save fails, else 0
//	checkpoint_then_loop  saves "cp1", loops until stop_requested, saves "cp2", proc_exit(75) (3 if a save fails)
//	progress              stint.progress(3, 10); writes "deadline\n" if stint.deadline_ms > 0, else "none\n"; proc_exit(0)
//	bench_toploops        while loops tested at their top (top, topnested exports, for the benchmarks); stdin '0'/'1' runs one from _start
//	resume                progress (1, 2), saves "cp", loops until stop_requested, proc_exit(75); from a checkpoint writes "resumed from cp", proc_exit(0)
//	progress_wait         progress (1, 2), then loops until stop_requested, proc_exit(75)
//	nap                   saves "nap", sleeps one second (poll_oneoff), writes "nap\n" to stdout, proc_exit(0)
//	cpecho                writes its starting checkpoint (up to 192 KiB) to stdout, proc_exit(0); none: proc_exit(3)
//	upper                 copies stdin to stdout upper-cased (ASCII); a NUL byte: message on stderr, proc_exit(1)
//	counter               24 rounds of 4M LCG steps: "round\n" to stderr and the state in hex to stdout after each; proc_exit(0) (knows nothing of Stint: suspended by the snapshot tests)
//	dirty                 grows to 16 pages, proc_exit(1) unless they start zeroed, fills them with 0xff, proc_exit(0)
//	seams_stderr_fail     5000 bytes of stderr, then "boom: the last line\n", proc_exit(1) (the stderr tail)
//	abi_call              calls one stint import with arguments read from stdin (sandbox FuzzStintABI)
//	wasi_counts           exports making WASI calls with counts just over (and at) the runner's caps (sandbox/wasicounts.go)
//	work                  for each stdin byte b a leaf loop of b*64 passes, then "done\n": deterministic work units
//	work_arms             10,000 passes through a light or (stdin 'h') a heavy br_table arm: work charged per arm
//	work_big_leaf         a loop calling a 3.6 KB loop-free function 1,000 times: a big leaf is charged its size
//	bulk_ops              every bulk memory and table operation, charged by size (sandbox TestBulkChargeEquivalent)
//	mount_escape          tries to leave its mount (fd 3) through a planted symlink; reports each attempt's errno
//	mount_diskhog         fills its mount with data, sparse files, files, directories or symlinks (stdin's first byte)
//	mount_fdhog           opens one file of its mount until an open fails; reports the count and errno
//	stopping_fifo         signals, then opens and reads "fifo" of its mount: blocks in the host (no forced stop ends it)
//	stopping_block        signals, then calls stint_test.block (internal/testwasm/blockhost) with a path from stdin
//	nested_loops          three loops, each calling the next from inside it, the outer one endless (issue 23); also export "run"
//	nested_loops_start    nested_loops, entered from the start section
//	shape_bench           the compute shapes of issue 9 as exports taking n (loop, nested, brtable, tree), for BenchmarkInterrupt
//
// The endless shapes of issue 9: each writes its name and a newline to
// stderr, then never ends on its own (only a forced stop ends it, in both
// interrupt modes):
//
//	shape_loop_br         a loop closed by an unconditional br
//	shape_br_if_loop      a loop closed by br_if on a 64-bit counter
//	shape_br_table_loop   a state machine whose br_table jumps back to the loop
//	shape_nested_loops    an outer loop around an inner loop of 1000 iterations
//	shape_unrolled        a loop whose body is unrolled 16 times
//	shape_recursion       direct recursion without a loop, f(n) calls f(n-1) twice
//	shape_tree            the same, every call in one arm of an if
//	shape_mutual          mutual recursion without a loop
//	shape_call_indirect   indirect recursion without a loop (call_indirect)
//	shape_huge_body       a 256-update straight-line body, repeated by recursion
//	shape_start           a start section that never returns (recursion); _start is never reached
//	shape_bulk            a loop calling a loop-free function of one 32 MiB memory.fill and one 16 MiB memory.copy
//	shape_random          a loop asking WASI random_get for 32 MiB a pass
//	shape_arm_big         a loop calling a function over 2 KiB whose only call is in an if arm not taken (issue 37's red team)
//	shape_leaf_run        a loop calling a body of 2,000 calls to a leaf of 640 dependent loads (issue 37's red team)
//
// The plugins have no _start; their exports follow Stint's calling
// convention (docs/plugins.md):
//
//	plugin_basic          no imports: noop, upper, count (warm state), spin, trap, badout, big, grow
//	plugin_host           imports env.kv_get, stint_plugin.config_get, stint.stop_requested: kv, config, stop_aware
//	plugin_block          imports stint_test.block (internal/testwasm/blockhost): block calls it with its input as the path
//	plugin_badsig         imports env.kv_get with the wrong signature ((i32) -> i32)
//	plugin_extism         an Extism plugin (imports extism:host/env): echo, and one hostile kernel misuse per export
//	plugin_http           an Extism plugin with no runtime: get makes one GET of its input URL through http_request (sandbox BenchmarkExtismHTTP)
//
// The endless fixtures that print a line on stderr first (loop, sleep,
// stop_ignore) do so to let a test know they are running without sleeping.
// Every fixture is listed here (TestIndexListsEveryFixture). The .wat files
// say more in their header comments. memgrow has no declared
// maximum: run it under a memory limit.
package wat
