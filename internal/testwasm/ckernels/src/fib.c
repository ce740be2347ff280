/* fib: naive recursive Fibonacci of n (default 32), almost no work in each
 * call; prints fib(n). clang -O2 turns the second call into a loop around the
 * first (an accumulator), so fib(32) makes about 3.5 million calls. */
#include "common.h"

static __attribute__((noinline)) uint32_t fib(uint32_t n) {
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(void) {
	long n = read_size(32);
	printf("%u\n", fib((uint32_t)n));
	return 0;
}
