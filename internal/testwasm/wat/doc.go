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
//
// The plugins have no _start; their exports follow Stint's calling
// convention (docs/plugins.md):
//
//	plugin_basic          no imports: noop, upper, count (warm state), spin, trap, badout, big, grow
//	plugin_host           imports env.kv_get, stint_plugin.config_get, stint.stop_requested: kv, config, stop_aware
//	plugin_block          imports stint_test.block (internal/testwasm/blockhost): block calls it with its input as the path
//	plugin_badsig         imports env.kv_get with the wrong signature ((i32) -> i32)
//	plugin_extism         an Extism plugin (imports extism:host/env): echo, and one hostile kernel misuse per export
//
// The endless fixtures that print a line on stderr first (loop, sleep,
// stop_ignore) do so to let a test know they are running without sleeping.
// The .wat files say more in their header comments. memgrow has no declared
// maximum: run it under a memory limit.
package wat
