/* chase: a compute guest that knows nothing of Stint, for the snapshot
 * tests: it links MiB mebibytes (default 48) into one random cycle
 * (Sattolo's algorithm), then walks it for ROUNDS rounds (default 8),
 * one pass over the whole cycle each, printing a line per round with a
 * checksum of every step so far. Stdin: "ROUNDS MIB" (both optional).
 * Dependent, cache-missing loads: most of its time is memory latency. */
#include "common.h"
#include <stdlib.h>

static long read_two(long *second) {
	char buf[64];
	ssize_t n = read(0, buf, sizeof buf - 1);
	long v[2] = {0, 0};
	int k = 0, any[2] = {0, 0};
	for (ssize_t i = 0; i < n && k < 2; i++) {
		if (buf[i] >= '0' && buf[i] <= '9') {
			v[k] = v[k] * 10 + (buf[i] - '0');
			any[k] = 1;
		} else if (any[k]) {
			k++;
		}
	}
	if (any[1])
		*second = v[1];
	return any[0] ? v[0] : -1;
}

int main(void) {
	long mib = 48;
	long rounds = read_two(&mib);
	if (rounds < 0)
		rounds = 8;
	size_t n = (size_t)mib * (1 << 20) / sizeof(uint32_t);
	uint32_t *next = malloc(n * sizeof(uint32_t));
	if (!next || n < 2)
		return 1;
	for (size_t i = 0; i < n; i++)
		next[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) { /* Sattolo: one cycle through all */
		size_t j = rng() % i;
		uint32_t t = next[i];
		next[i] = next[j];
		next[j] = t;
	}
	uint32_t at = 0;
	uint64_t sum = 0;
	for (long r = 1; r <= rounds; r++) {
		for (size_t s = 0; s < n; s++) {
			at = next[at];
			sum = sum * 31 + at;
		}
		printf("round %ld of %ld: at %u, checksum %016llx\n", r, rounds, at, (unsigned long long)sum);
		fflush(stdout);
	}
	return 0;
}
