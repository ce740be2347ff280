/* common.h: what every kernel shares. A kernel reads an optional size from
 * stdin (a decimal number; empty stdin keeps the kernel's default), does its
 * work and prints one checksum line that depends on all of it, so that the
 * compiler cannot drop any of the work. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

/* read_size returns the decimal number on stdin, or def if there is none. */
static long read_size(long def) {
	char buf[32];
	ssize_t n = read(0, buf, sizeof buf - 1);
	long v = 0;
	int any = 0;
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			break;
		v = v * 10 + (buf[i] - '0');
		any = 1;
	}
	return any ? v : def;
}

/* rng is a xorshift32 generator: the kernels' inputs, the same every run. */
static uint32_t rng_state = 2463534242u;
static uint32_t rng(void) {
	uint32_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return rng_state = x;
}
