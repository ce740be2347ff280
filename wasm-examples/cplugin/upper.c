// upper: a C plugin under Stint's calling convention (docs/plugins.md),
// a WASI reactor built with clang and wasi-libc:
//
//	clang-14 --target=wasm32-wasi --sysroot=/usr -mexec-model=reactor -O2 \
//	    -nodefaultlibs -lc -o upper.wasm upper.c
//
// (-nodefaultlibs -lc: Debian's clang-14 has no wasm32 compiler-rt, which
// this code does not need.) Its manifest must grant wasi_snapshot_preview1
// (wasi-libc's malloc and start-up import it).
//
//	alloc(len) -> ptr    malloc(len): the input buffer
//	upper(ptr, len)      the input upper-cased, in a new buffer; the input is freed
#include <stdint.h>
#include <stdlib.h>

static char *last; // the previous call's output, freed at the next call

__attribute__((export_name("alloc"))) void *plugin_alloc(uint32_t n) { return malloc(n); }

__attribute__((export_name("upper"))) uint64_t upper(char *in, uint32_t n) {
	free(last);
	last = malloc(n ? n : 1);
	if (last == NULL) {
		__builtin_trap();
	}
	for (uint32_t i = 0; i < n; i++) {
		last[i] = (in[i] >= 'a' && in[i] <= 'z') ? in[i] - ('a' - 'A') : in[i];
	}
	free(in);
	return ((uint64_t)(uintptr_t)last << 32) | n;
}
