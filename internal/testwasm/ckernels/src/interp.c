/* interp: a switch-dispatch bytecode interpreter (a register machine of 8
 * registers) running a program of two nested counted loops, n outer
 * iterations (default 20000) of 64 inner ones; prints the accumulator. One
 * switch (br_table) per bytecode executed: 9 million at the default. */
#include "common.h"

enum { LOADI, ADD, ADDI, XOR, SHL, MUL, DEC, JNZ, HALT };

typedef struct {
	uint8_t op, a, b;
	int32_t imm;
} insn;

static __attribute__((noinline)) uint32_t run(const insn *prog, uint32_t *r) {
	const insn *pc = prog;
	for (;;) {
		const insn *i = pc++;
		switch (i->op) {
		case LOADI: r[i->a] = (uint32_t)i->imm; break;
		case ADD: r[i->a] += r[i->b]; break;
		case ADDI: r[i->a] += (uint32_t)i->imm; break;
		case XOR: r[i->a] ^= r[i->b]; break;
		case SHL: r[i->a] = r[i->a] << (r[i->b] & 31) | r[i->a] >> (32 - (r[i->b] & 31) & 31); break;
		case MUL: r[i->a] *= r[i->b]; break;
		case DEC: r[i->a]--; break;
		case JNZ: if (r[i->a]) pc = prog + i->imm; break;
		case HALT: return r[0];
		}
	}
}

int main(void) {
	long n = read_size(20000);
	/* r0 acc, r1 outer count, r2 inner count, r3 scratch, r4 = 3 */
	insn prog[] = {
		/* 0 */ {LOADI, 0, 0, 1},
		/* 1 */ {LOADI, 1, 0, (int32_t)n},
		/* 2 */ {LOADI, 4, 0, 3},
		/* 3 */ {LOADI, 2, 0, 64},
		/* 4 */ {ADD, 0, 2, 0},
		/* 5 */ {MUL, 0, 4, 0},
		/* 6 */ {SHL, 3, 2, 0},
		/* 7 */ {XOR, 0, 3, 0},
		/* 8 */ {ADDI, 3, 0, 7},
		/* 9 */ {DEC, 2, 0, 0},
		/* 10 */ {JNZ, 2, 0, 4},
		/* 11 */ {DEC, 1, 0, 0},
		/* 12 */ {JNZ, 1, 0, 3},
		/* 13 */ {HALT, 0, 0, 0},
	};
	uint32_t r[8] = {0};
	r[3] = 0x9e3779b9u;
	printf("%u\n", run(prog, r));
	return 0;
}
