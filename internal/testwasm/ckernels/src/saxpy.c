/* saxpy: y = a*x + y over n floats (default 65536), repeated 128 times with
 * a changing a, then a dot product: short dense float loops; prints an
 * integer checksum. */
#include "common.h"
#include <stdlib.h>

int main(void) {
	long n = read_size(65536);
	float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
	if (!x || !y)
		return 1;
	for (long i = 0; i < n; i++) {
		x[i] = (float)(rng() % 1000) / 1000.0f;
		y[i] = (float)(rng() % 1000) / 1000.0f;
	}
	for (int r = 0; r < 128; r++) {
		float a = (r & 1) ? 0.5f : -0.49f;
		for (long i = 0; i < n; i++)
			y[i] = a * x[i] + y[i];
	}
	double dot = 0;
	for (long i = 0; i < n; i++)
		dot += (double)x[i] * y[i];
	printf("%lld\n", (long long)(dot * 1000.0));
	return 0;
}
