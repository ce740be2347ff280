/* readloop: the snapshot tests' guest with a read-only mount (not a
 * kernel): for each of ROUNDS rounds (stdin, default 40), it opens each
 * file FILE.0 .. FILE.7 under DIR (argv[1], default /data), reads it
 * whole into a running hash, closes it, then does 20,000 rounds of
 * arithmetic on the hash for each 4 KiB block it read, and prints one line with
 * the round and the hash. A file it cannot open is printed as its errno.
 * It holds a file open only while it reads it, so that it can be suspended
 * between two reads, and in odd rounds the directory itself all round. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
	const char *dir = argc > 1 ? argv[1] : "/data";
	long rounds = read_size(40);
	uint32_t h = 2166136261u;
	static unsigned char buf[4096];
	char path[256];
	for (long r = 0; r < rounds; r++) {
		/* Odd rounds hold DIR itself open throughout (open(2) with
		 * O_RDONLY, as wazero opens a mount's directory for its
		 * preopen), and use it at the round's end. */
		int dfd = r % 2 ? open(dir, O_RDONLY) : -1;
		for (int f = 0; f < 8; f++) {
			snprintf(path, sizeof path, "%s/file.%d", dir, f);
			int fd = open(path, O_RDONLY);
			if (fd < 0) {
				printf("round %ld: %s: errno %d\n", r, path, errno);
				continue;
			}
			ssize_t n, blocks = 0;
			while ((n = read(fd, buf, sizeof buf)) > 0) {
				for (ssize_t i = 0; i < n; i++) {
					h = (h ^ buf[i]) * 16777619u;
				}
				blocks++;
			}
			close(fd);
			for (long k = 0; k < 20000 * blocks; k++) {
				h = h * 1103515245u + 12345u + (uint32_t)k;
			}
		}
		if (dfd >= 0) {
			struct stat st;
			if (fstat(dfd, &st) != 0 || !S_ISDIR(st.st_mode))
				printf("round %ld: fstat of %s: errno %d\n", r, dir, errno);
			close(dfd);
		}
		printf("round %ld: %08x\n", r, h);
	}
	return 0;
}
