/* matmul: C = A x B for n x n matrices of doubles (default 160), the
 * classic i-k-j loop nest (dense float multiply-adds, no calls); prints an
 * integer checksum of C. */
#include "common.h"
#include <stdlib.h>

int main(void) {
	long n = read_size(160);
	double *a = malloc((size_t)(n * n) * sizeof *a), *b = malloc((size_t)(n * n) * sizeof *b),
	       *c = calloc((size_t)(n * n), sizeof *c);
	if (!a || !b || !c)
		return 1;
	for (long i = 0; i < n * n; i++) {
		a[i] = (double)(rng() % 1000) / 100.0;
		b[i] = (double)(rng() % 1000) / 100.0;
	}
	for (long i = 0; i < n; i++)
		for (long k = 0; k < n; k++) {
			double aik = a[i * n + k];
			for (long j = 0; j < n; j++)
				c[i * n + j] += aik * b[k * n + j];
		}
	uint64_t sum = 0;
	for (long i = 0; i < n * n; i++)
		sum = sum * 31 + (uint64_t)(c[i] * 16.0);
	printf("%llu\n", (unsigned long long)sum);
	return 0;
}
