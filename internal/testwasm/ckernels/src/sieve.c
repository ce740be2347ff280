/* sieve: the sieve of Eratosthenes below n (default 4000000) on a byte
 * array; prints the number of primes. Tight strided store loops. */
#include "common.h"
#include <stdlib.h>

int main(void) {
	long n = read_size(4000000);
	unsigned char *composite = calloc((size_t)n + 1, 1);
	if (!composite)
		return 1;
	long count = 0;
	for (long i = 2; i < n; i++) {
		if (composite[i])
			continue;
		count++;
		for (long long j = (long long)i * i; j < n; j += i) /* i * i overflows a 32-bit long */
			composite[j] = 1;
	}
	printf("%ld\n", count);
	return 0;
}
