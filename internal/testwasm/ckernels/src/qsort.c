/* qsort: libc qsort of n 32-bit ints (default 50000) with a comparator,
 * called through a function pointer (call_indirect) for every comparison;
 * prints a checksum of the sorted array. */
#include "common.h"
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

int main(void) {
	long n = read_size(50000);
	uint32_t *v = malloc((size_t)n * sizeof *v);
	if (!v)
		return 1;
	for (long i = 0; i < n; i++)
		v[i] = rng();
	qsort(v, (size_t)n, sizeof *v, cmp);
	uint32_t sum = 0;
	for (long i = 0; i < n; i++) {
		if (i > 0 && v[i - 1] > v[i])
			return 2;
		sum = sum * 31 + v[i];
	}
	printf("%u\n", sum);
	return 0;
}
